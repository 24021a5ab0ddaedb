package broker

// DescribeClientQuotas, key 48, versions 0-1.
//
// Describes the quotas stored as Kafka's ZooKeeper mode stores them (the
// quota keys of /config/users/<user>, /config/clients/<client-id> and
// /config/users/<user>/clients/<client-id>, and the
// connection_creation_rate of /config/ips/<ip>; <default> for the default
// entity) that match the filter.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/quota"
)

func (b *Broker) handleDescribeClientQuotas(ctx context.Context, r *request, req *kmsg.DescribeClientQuotasRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	// Entries is nullable; Kafka's tools take null as an error.
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	types := map[string]bool{}
	for _, c := range req.Components {
		if c.EntityType != "user" && c.EntityType != "client-id" && c.EntityType != "ip" {
			// Kafka's ZooKeeper mode throws UnsupportedVersionException.
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			msg := "Custom entity type '" + c.EntityType + "' not supported"
			resp.ErrorMessage = &msg
			return respond(resp)
		}
		types[c.EntityType] = true
	}
	if types["ip"] && (types["user"] || types["client-id"]) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		msg := "Invalid entity filter component combination, IP filter component should not be used with user or clientId filter component."
		resp.ErrorMessage = &msg
		return respond(resp)
	}
	table, err := controller.ClientQuotas(ctx, b.store)
	if err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		return respond(resp)
	}
	for entity, values := range table {
		if !quotaEntityMatches(req.Components, req.Strict, entity) {
			continue
		}
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		keys := quota.Keys
		if entity.IP.Set {
			keys = []string{quota.ConnectionCreationRate}
		}
		for _, k := range keys {
			if v, ok := values[k]; ok {
				val := kmsg.NewDescribeClientQuotasResponseEntryValue()
				val.Key, val.Value = k, v
				e.Values = append(e.Values, val)
			}
		}
		for _, part := range []struct {
			typ  string
			name quota.Name
		}{{"user", entity.User}, {"client-id", entity.Client}, {"ip", entity.IP}} {
			if !part.name.Set {
				continue
			}
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type = part.typ
			if !part.name.Default {
				n := part.name.Name
				ent.Name = &n
			}
			e.Entity = append(e.Entity, ent)
		}
		resp.Entries = append(resp.Entries, e)
	}
	return respond(resp)
}

// quotaEntityMatches is Kafka's filter of DescribeClientQuotas: every
// component must match the entity's part of its type, by exact name (0;
// a null name is the default), the default (1) or any name (2); strict
// also excludes entities with parts no component names.
func quotaEntityMatches(components []kmsg.DescribeClientQuotasRequestComponent, strict bool, e quota.Entity) bool {
	named := map[string]bool{}
	for _, c := range components {
		var n quota.Name
		switch c.EntityType {
		case "user":
			n = e.User
		case "client-id":
			n = e.Client
		case "ip":
			n = e.IP
		}
		named[c.EntityType] = true
		if !n.Set {
			return false
		}
		switch c.MatchType {
		case 0:
			if c.Match == nil && !n.Default || c.Match != nil && (n.Default || *c.Match != n.Name) {
				return false
			}
		case 1:
			if !n.Default {
				return false
			}
		case 2:
			if n.Default {
				return false
			}
		}
	}
	if strict && (e.User.Set && !named["user"] || e.Client.Set && !named["client-id"] || e.IP.Set && !named["ip"]) {
		return false
	}
	return true
}
