package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/brook-mq/brook/controller/store"
)

// ErrUnknownTopic means the topic has no /brokers/topics node.
var ErrUnknownTopic = errors.New("controller: unknown topic")

// configChangeExpiry is how long change notifications are kept before any
// broker may purge them (Kafka's ZkNodeChangeNotificationListener: 15 minutes).
const configChangeExpiry = 15 * time.Minute

// Config entity types: the first path element under /config and of the
// entity names in change notifications, as in Kafka's ZooKeeper layout.
const (
	EntityTopics  = "topics"
	EntityBrokers = "brokers"
	// DefaultBroker names the cluster-wide dynamic broker defaults
	// (/config/brokers/<default>).
	DefaultBroker = "<default>"
)

// EntityConfigPath is /config/<entityType>/<name>.
func EntityConfigPath(entityType, name string) string { return "/config/" + entityType + "/" + name }

// SetTopicConfig replaces a topic's config overrides and writes a change
// notification under /config/changes so that every broker reloads them.
func SetTopicConfig(ctx context.Context, st Store, topic string, cfg map[string]string) error {
	if ok, _, err := st.Exists(ctx, TopicPath(topic)); err != nil {
		return fmt.Errorf("set config of %s: %w", topic, err)
	} else if !ok {
		return fmt.Errorf("set config of %s: %w", topic, ErrUnknownTopic)
	}
	return SetEntityConfig(ctx, st, EntityTopics, topic, cfg)
}

// SetEntityConfig replaces the dynamic configs of an entity (a topic, a
// broker id or the broker default) and writes a change notification under
// /config/changes so that every broker reloads them.
func SetEntityConfig(ctx context.Context, st Store, entityType, name string, cfg map[string]string) error {
	if err := EnsureTopLevelPaths(ctx, st); err != nil {
		return err
	}
	for {
		op, err := setOrCreateOp(ctx, st, EntityConfigPath(entityType, name), encodeConfig(cfg))
		if err != nil {
			return fmt.Errorf("set config of %s/%s: %w", entityType, name, err)
		}
		err = st.Multi(ctx, op, store.CreateOp{Path: ConfigChangesPath + "/" + ConfigChangePrefix, Data: encodeConfigChange(entityType + "/" + name), Flags: store.Sequential})
		if err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrNodeExists) && !errors.Is(err, store.ErrBadVersion) {
			return fmt.Errorf("set config of %s/%s: %w", entityType, name, err)
		}
		// Raced with another writer of the same config; the last write wins, as in Kafka.
	}
}

// TopicConfigs reads a topic's config overrides; a topic without a config
// node has none.
func TopicConfigs(ctx context.Context, st Store, topic string) (map[string]string, error) {
	return EntityConfigs(ctx, st, EntityTopics, topic)
}

// EntityConfigs reads an entity's dynamic configs; none without a node.
func EntityConfigs(ctx context.Context, st Store, entityType, name string) (map[string]string, error) {
	data, _, err := st.Get(ctx, EntityConfigPath(entityType, name))
	if errors.Is(err, store.ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config of %s/%s: %w", entityType, name, err)
	}
	return decodeConfig(data)
}

// WatchTopicConfigs calls onChange with a topic's full overrides after each
// change notification for a topic; see WatchConfigs.
func WatchTopicConfigs(ctx context.Context, st Store, onChange func(topic string, cfg map[string]string), opts ...Option) error {
	return WatchConfigs(ctx, st, func(entityType, name string, cfg map[string]string) {
		if entityType == EntityTopics {
			onChange(name, cfg)
		}
	}, opts...)
}

// WatchConfigs calls onChange with an entity's full configs after each
// change notification, starting with those present when it starts (so a
// broker misses nothing between loading configs and watching). It purges
// notifications older than 15 minutes, as every Kafka broker does. It blocks
// until ctx is done or the session ends; run it in its own goroutine.
func WatchConfigs(ctx context.Context, st Store, onChange func(entityType, name string, cfg map[string]string), opts ...Option) error {
	o := resolveOptions(opts)
	if err := store.EnsurePath(ctx, st, ConfigChangesPath); err != nil {
		return err
	}
	last := int64(-1)
	for {
		children, _, ch, err := st.ChildrenW(ctx, ConfigChangesPath)
		if err != nil {
			return fmt.Errorf("watch config changes: %w", err)
		}
		for _, n := range changesAfter(children, last) {
			last = n.seq
			entityType, name, stat, ok, err := readConfigChange(ctx, st, n.name)
			if err != nil {
				return err
			}
			if ok {
				cfg, err := EntityConfigs(ctx, st, entityType, name)
				if err != nil {
					return err
				}
				onChange(entityType, name, cfg)
			}
			if stat.Ctime != 0 && o.Now().Sub(time.UnixMilli(stat.Ctime)) > configChangeExpiry {
				// Another broker may purge it first; either way it is gone.
				_ = st.Delete(ctx, ConfigChangesPath+"/"+n.name, store.AnyVersion)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-ch:
			if ev.Type == store.EventNotWatching {
				return fmt.Errorf("watch config changes: %w", ev.Err)
			}
		}
	}
}

// configChangeNode is one change notification under /config/changes.
type configChangeNode struct {
	name string
	seq  int64
}

// changesAfter lists the notifications among children with a sequence
// number above last, in sequence order: ZooKeeper lists children in no
// particular order, and a watcher that remembers the last one it handled
// must not skip a lower one listed after a higher.
func changesAfter(children []string, last int64) []configChangeNode {
	var out []configChangeNode
	for _, c := range children {
		if seq, ok := changeSeq(c); ok && seq > last {
			out = append(out, configChangeNode{c, seq})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// readConfigChange reads the notification child of /config/changes: the
// entity it names and its stat. ok is false when it is gone or names an
// entity type Brook does not keep configs for.
func readConfigChange(ctx context.Context, st Store, child string) (entityType, name string, stat store.Stat, ok bool, err error) {
	data, stat, err := st.Get(ctx, ConfigChangesPath+"/"+child)
	if errors.Is(err, store.ErrNoNode) {
		return "", "", store.Stat{}, false, nil
	}
	if err != nil {
		return "", "", store.Stat{}, false, fmt.Errorf("read config change %s: %w", child, err)
	}
	entity, err := decodeConfigChange(data)
	if err != nil {
		return "", "", stat, false, nil
	}
	entityType, name, ok = strings.Cut(entity, "/")
	ok = ok && (entityType == EntityTopics || entityType == EntityBrokers || entityType == EntityUsers || entityType == EntityClients || entityType == EntityIPs)
	return entityType, name, stat, ok, nil
}

func changeSeq(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, ConfigChangePrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}
