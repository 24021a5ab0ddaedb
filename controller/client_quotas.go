package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/quota"
)

// EntityClients is the config entity type of client ids:
// /config/clients/<client-id> holds a client id's quotas.
const EntityClients = "clients"

// EntityIPs is the config entity type of client addresses (KIP-612):
// /config/ips/<ip> holds an address's connection_creation_rate, kept as
// Kafka's ZooKeeper mode keeps it, unsanitized.
const EntityIPs = "ips"

// quotaEntityName is a user or client id in a ZooKeeper path: sanitized,
// or <default>.
func quotaEntityName(n quota.Name) string {
	if n.Default {
		return DefaultBroker
	}
	return SanitizeEntityName(n.Name)
}

// ClientQuotaPath is where Kafka's ZooKeeper mode keeps an entity's
// quotas, as the entity type and name of /config/<type>/<name> and of its
// change notification: users/<user>, clients/<client-id> or
// users/<user>/clients/<client-id>.
func ClientQuotaPath(e quota.Entity) (entityType, name string) {
	switch {
	case e.IP.Set:
		if e.IP.Default {
			return EntityIPs, DefaultBroker
		}
		return EntityIPs, e.IP.Name
	case e.User.Set && e.Client.Set:
		return EntityUsers, quotaEntityName(e.User) + "/" + EntityClients + "/" + quotaEntityName(e.Client)
	case e.User.Set:
		return EntityUsers, quotaEntityName(e.User)
	default:
		return EntityClients, quotaEntityName(e.Client)
	}
}

// AlterClientQuota sets (non-nil) or removes (nil) quota configs of an
// entity, keeping its other configs (a user's SCRAM credentials), and
// writes the change notification Kafka's brokers follow.
func AlterClientQuota(ctx context.Context, st Store, e quota.Entity, changes map[string]*string) error {
	entityType, name := ClientQuotaPath(e)
	if e.User.Set && e.Client.Set {
		// The user's node is the parent of its clients; Kafka creates it
		// empty when missing.
		if err := store.EnsurePath(ctx, st, EntityConfigPath(entityType, quotaEntityName(e.User)+"/"+EntityClients)); err != nil {
			return fmt.Errorf("set quotas of %s/%s: %w", entityType, name, err)
		}
	}
	return alterEntityConfigs(ctx, st, entityType, name, changes)
}

// ClientQuotas reads every quota under /config/users, /config/clients
// and /config/ips into a table. Values that do not parse are skipped, as Kafka's brokers
// skip a config they cannot apply.
func ClientQuotas(ctx context.Context, st Store) (quota.Table, error) {
	t := quota.Table{}
	add := func(e quota.Entity, entityType, name string) error {
		cfg, err := EntityConfigs(ctx, st, entityType, name)
		if err != nil {
			return err
		}
		if v := QuotaValues(e, cfg); len(v) > 0 {
			t[e] = v
		}
		return nil
	}
	users, err := EntityNames(ctx, st, EntityUsers)
	if err != nil {
		return nil, err
	}
	for _, u := range users {
		user := quotaName(u)
		if err := add(quota.Entity{User: user}, EntityUsers, quotaEntityName(user)); err != nil {
			return nil, err
		}
		clients, err := EntityNames(ctx, st, EntityUsers+"/"+quotaEntityName(user)+"/"+EntityClients)
		if err != nil {
			return nil, err
		}
		for _, c := range clients {
			e := quota.Entity{User: user, Client: quotaName(c)}
			_, name := ClientQuotaPath(e)
			if err := add(e, EntityUsers, name); err != nil {
				return nil, err
			}
		}
	}
	clients, err := EntityNames(ctx, st, EntityClients)
	if err != nil {
		return nil, err
	}
	for _, c := range clients {
		e := quota.Entity{Client: quotaName(c)}
		if err := add(e, EntityClients, quotaEntityName(e.Client)); err != nil {
			return nil, err
		}
	}
	ips, _, err := st.Children(ctx, "/config/"+EntityIPs)
	if err != nil && !errors.Is(err, store.ErrNoNode) {
		return nil, fmt.Errorf("list %s: %w", EntityIPs, err)
	}
	for _, ip := range ips {
		if err := add(quota.Entity{IP: quotaName(ip)}, EntityIPs, ip); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// QuotaValues is the quotas among an entity's configs: the keys that
// apply to its kind (an IP has only connection_creation_rate), parsed.
// Values that do not parse are skipped, as Kafka's brokers skip a config
// they cannot apply.
func QuotaValues(e quota.Entity, cfg map[string]string) map[string]float64 {
	keys := quota.Keys
	if e.IP.Set {
		keys = []string{quota.ConnectionCreationRate}
	}
	var out map[string]float64
	for _, k := range keys {
		v, ok := cfg[k]
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		if out == nil {
			out = map[string]float64{}
		}
		out[k] = f
	}
	return out
}

// ClientQuotaEntity is the entity of a change notification's entity type
// and name (ClientQuotaPath's inverse); false for a path that names none.
func ClientQuotaEntity(entityType, name string) (quota.Entity, bool) {
	desanitized := func(s string) (quota.Name, bool) {
		n, err := DesanitizeEntityName(s)
		return quotaName(n), err == nil && n != ""
	}
	switch entityType {
	case EntityIPs:
		return quota.Entity{IP: quotaName(name)}, name != ""
	case EntityClients:
		c, ok := desanitized(name)
		return quota.Entity{Client: c}, ok
	case EntityUsers:
		user, client, pair := strings.Cut(name, "/"+EntityClients+"/")
		u, ok := desanitized(user)
		if !pair {
			return quota.Entity{User: u}, ok && !strings.Contains(name, "/")
		}
		c, cok := desanitized(client)
		return quota.Entity{User: u, Client: c}, ok && cok
	}
	return quota.Entity{}, false
}

// quotaName is the Name of a desanitized entity name from EntityNames.
func quotaName(s string) quota.Name {
	if s == DefaultBroker {
		return quota.DefaultName
	}
	return quota.Named(s)
}
