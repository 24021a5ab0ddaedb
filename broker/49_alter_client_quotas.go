package broker

// AlterClientQuotas, key 49, versions 0-1.
//
// Sets and removes the quotas of user, client-id and (user, client-id)
// entities where Kafka's ZooKeeper mode keeps them (/config/users/<user>,
// /config/clients/<client-id>, /config/users/<user>/clients/<client-id>,
// <default> for the default entity), and of ip entities
// (connection_creation_rate, KIP-612) under /config/ips/<ip>, with a
// /config/changes notification, and with Kafka's validation; each entry
// succeeds or fails alone.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/quota"
)

func (b *Broker) handleAlterClientQuotas(ctx context.Context, r *request, req *kmsg.AlterClientQuotasRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		parts := make([]quota.EntityPart, len(e.Entity))
		for i, ee := range e.Entity {
			parts[i] = quota.EntityPart{Type: ee.Type, Name: ee.Name}
			rent := kmsg.NewAlterClientQuotasResponseEntryEntity()
			rent.Type, rent.Name = ee.Type, ee.Name
			re.Entity = append(re.Entity, rent)
		}
		if err := b.alterClientQuota(ctx, parts, e.Ops, req.ValidateOnly); err != nil {
			re.ErrorCode = kerr.InvalidRequest.Code
			if !isQuotaValidation(err) {
				re.ErrorCode = kerr.UnknownServerError.Code
			}
			msg := err.Error()
			re.ErrorMessage = &msg
		}
		resp.Entries = append(resp.Entries, re)
	}
	return respond(resp)
}

// quotaInvalid marks the errors that are the request's fault.
type quotaInvalid struct{ error }

func isQuotaValidation(err error) bool {
	var q quotaInvalid
	return errors.As(err, &q)
}

func (b *Broker) alterClientQuota(ctx context.Context, parts []quota.EntityPart, ops []kmsg.AlterClientQuotasRequestEntryOp, validateOnly bool) error {
	entity, err := quota.ParseEntity(parts)
	if err != nil {
		return quotaInvalid{err}
	}
	changes := map[string]*string{}
	for _, op := range ops {
		if err := quota.ValidateEntityOp(entity, op.Key, op.Value, op.Remove); err != nil {
			return quotaInvalid{err}
		}
		if op.Remove {
			changes[op.Key] = nil
			continue
		}
		v := quota.FormatValue(op.Key, op.Value)
		changes[op.Key] = &v
	}
	if validateOnly {
		return nil
	}
	return controller.AlterClientQuota(ctx, b.store, entity, changes)
}
