package controller

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/brook-mq/brook/controller/store"
)

// EntityUsers is the config entity type of users: /config/users/<user>
// holds a user's SCRAM credentials (and quotas), one config per SCRAM
// mechanism, "SCRAM-SHA-256" -> "salt=...,stored_key=...,server_key=...,
// iterations=4096", exactly as Kafka's kafka-configs writes them.
const EntityUsers = "users"

// SanitizeEntityName is Kafka's Sanitizer.sanitize: a user name as it
// appears in a ZooKeeper path, URL-encoded with spaces as %20, '*' as %2A
// and '~' kept.
func SanitizeEntityName(name string) string {
	s := url.QueryEscape(name)
	s = strings.ReplaceAll(s, "+", "%20")
	s = strings.ReplaceAll(s, "*", "%2A")
	return strings.ReplaceAll(s, "%7E", "~")
}

// DesanitizeEntityName undoes SanitizeEntityName.
func DesanitizeEntityName(s string) (string, error) {
	name, err := url.QueryUnescape(strings.ReplaceAll(s, "+", "%2B"))
	if err != nil {
		return "", fmt.Errorf("user entity %q: %w", s, err)
	}
	return name, nil
}

// UserConfigs reads a user's configs (SCRAM credentials and quotas); none
// without a node.
func UserConfigs(ctx context.Context, st Store, user string) (map[string]string, error) {
	return EntityConfigs(ctx, st, EntityUsers, SanitizeEntityName(user))
}

// ScramUsers lists the users that have a config node, sorted.
func ScramUsers(ctx context.Context, st Store) ([]string, error) {
	return EntityNames(ctx, st, EntityUsers)
}

// AlterUserConfigs sets (value non-nil) or removes (nil) configs of a
// user, keeping the others, and writes the change notification
// (users/<sanitized user>) that Kafka's brokers follow.
func AlterUserConfigs(ctx context.Context, st Store, user string, changes map[string]*string) error {
	return alterEntityConfigs(ctx, st, EntityUsers, SanitizeEntityName(user), changes)
}

// alterEntityConfigs sets (non-nil) or removes (nil) configs of an entity,
// keeping the others, with a change notification.
func alterEntityConfigs(ctx context.Context, st Store, entityType, name string, changes map[string]*string) error {
	cfg, err := EntityConfigs(ctx, st, entityType, name)
	if err != nil {
		return err
	}
	for k, v := range changes {
		if v == nil {
			delete(cfg, k)
		} else {
			cfg[k] = *v
		}
	}
	return SetEntityConfig(ctx, st, entityType, name, cfg)
}

// EntityNames lists the entities of a type that have a config node
// (/config/<entityType>/<name>), names desanitized and sorted.
func EntityNames(ctx context.Context, st Store, entityType string) ([]string, error) {
	children, _, err := st.Children(ctx, "/config/"+entityType)
	if errors.Is(err, store.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", entityType, err)
	}
	out := make([]string, 0, len(children))
	for _, c := range children {
		if name, err := DesanitizeEntityName(c); err == nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}
