package broker

// DescribeClientQuotas, key 48, versions 0-1.
//
// Brook enforces no quotas, but kafka-configs --describe --entity-type
// users asks for them before the SCRAM credentials, so the quotas stored
// as Kafka's ZooKeeper mode stores them (the quota keys of
// /config/users/<user> and /config/clients/<client-id>, <default> for the
// default entity) are described. Entities of user and client-id together
// (/config/users/<user>/clients/<client-id>) are not read.

import (
	"context"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
)

// quotaKeys are Kafka's client quota configs (QuotaConfig).
var quotaKeys = []string{"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}

func (b *Broker) handleDescribeClientQuotas(ctx context.Context, r *request, req *kmsg.DescribeClientQuotasRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	// Entries is nullable; Kafka's tools take null as an error.
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, c := range req.Components {
		if c.EntityType != "user" && c.EntityType != "client-id" {
			resp.ErrorCode = kerr.InvalidRequest.Code
			msg := "Custom entity type '" + c.EntityType + "' not supported"
			resp.ErrorMessage = &msg
			return respond(resp)
		}
	}
	for _, kind := range []struct{ entityType, path string }{{"user", controller.EntityUsers}, {"client-id", "clients"}} {
		names, err := controller.EntityNames(ctx, b.store, kind.path)
		if err != nil {
			resp.ErrorCode = kerr.UnknownServerError.Code
			msg := err.Error()
			resp.ErrorMessage = &msg
			return respond(resp)
		}
		for _, name := range names {
			if !quotaEntityMatches(req.Components, kind.entityType, name) {
				continue
			}
			cfg, err := controller.EntityConfigs(ctx, b.store, kind.path, controller.SanitizeEntityName(name))
			if err != nil {
				continue
			}
			e := kmsg.NewDescribeClientQuotasResponseEntry()
			for _, k := range quotaKeys {
				if v, ok := cfg[k]; ok {
					f, err := strconv.ParseFloat(v, 64)
					if err != nil {
						continue
					}
					val := kmsg.NewDescribeClientQuotasResponseEntryValue()
					val.Key, val.Value = k, f
					e.Values = append(e.Values, val)
				}
			}
			if len(e.Values) == 0 {
				continue
			}
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type = kind.entityType
			if name != controller.DefaultBroker {
				n := name
				ent.Name = &n
			}
			e.Entity = append(e.Entity, ent)
			resp.Entries = append(resp.Entries, e)
		}
	}
	return respond(resp)
}

// quotaEntityMatches reports whether a single-type entity satisfies every
// component of the filter: exact name (0), the default entity (1), or any
// named entity (2).
func quotaEntityMatches(components []kmsg.DescribeClientQuotasRequestComponent, entityType, name string) bool {
	for _, c := range components {
		if c.EntityType != entityType {
			return false
		}
		isDefault := name == controller.DefaultBroker
		switch c.MatchType {
		case 0:
			if c.Match == nil && !isDefault || c.Match != nil && *c.Match != name {
				return false
			}
		case 1:
			if !isDefault {
				return false
			}
		case 2:
			if isDefault {
				return false
			}
		}
	}
	return true
}
