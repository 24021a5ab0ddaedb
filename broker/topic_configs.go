package broker

import (
	"context"
	"maps"
	"strconv"
	"sync"

	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/log"
)

// topicConfigs caches each topic's config overrides from the metadata
// store (/config/topics/<t>) and resolves them over the broker's defaults.
type topicConfigs struct {
	broker *config.Broker
	// load reads a topic's overrides from the store on a cache miss, so a
	// log created right after its topic sees the topic's configs even if
	// the change notification has not arrived yet.
	load func(topic string) (map[string]string, error)

	mu        sync.RWMutex
	overrides map[string]map[string]string
	// resolvedCache holds each topic's effective config: resolving it from
	// the overrides costs more than a produce request's append, and it
	// changes only with the overrides.
	resolvedCache map[string]config.Topic
}

func newTopicConfigs(cfg *config.Broker) *topicConfigs {
	return &topicConfigs{broker: cfg, overrides: map[string]map[string]string{}, resolvedCache: map[string]config.Topic{}}
}

// get returns the topic's overrides (a copy).
func (t *topicConfigs) get(topic string) map[string]string {
	t.mu.RLock()
	o, ok := t.overrides[topic]
	t.mu.RUnlock()
	if ok {
		return maps.Clone(o)
	}
	if t.load == nil {
		return nil
	}
	o, err := t.load(topic)
	if err != nil {
		return nil
	}
	t.set(topic, o)
	return maps.Clone(o)
}

func (t *topicConfigs) set(topic string, overrides map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if overrides == nil {
		overrides = map[string]string{}
	}
	t.overrides[topic] = maps.Clone(overrides)
	delete(t.resolvedCache, topic)
}

// setBroker replaces the broker configs topic defaults come from (after a
// dynamic broker config change) and forgets every resolved topic config.
func (t *topicConfigs) setBroker(cfg *config.Broker) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.broker = cfg
	clear(t.resolvedCache)
}

func (t *topicConfigs) forget(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.overrides, topic)
	delete(t.resolvedCache, topic)
}

// resolved is the topic's effective configuration. Overrides were validated
// when they were written, so an error here means the store holds something
// this version does not understand; the broker defaults stand in for it.
func (t *topicConfigs) resolved(topic string) config.Topic {
	t.mu.RLock()
	tc, ok := t.resolvedCache[topic]
	t.mu.RUnlock()
	if ok {
		return tc
	}
	overrides := t.get(topic)
	t.mu.RLock()
	broker := t.broker
	t.mu.RUnlock()
	tc, err := broker.Topic(overrides)
	if err != nil {
		tc, _ = broker.Topic(nil)
	}
	t.mu.Lock()
	// Cache only if the overrides did not change meanwhile (set deletes
	// the entry; a stale resolution must not outlive it).
	if cur, ok := t.overrides[topic]; ok && maps.Equal(cur, overrides) && t.broker == broker {
		t.resolvedCache[topic] = tc
	}
	t.mu.Unlock()
	return tc
}

// logConfig is the topic's configuration as the log package takes it.
func (t *topicConfigs) logConfig(topic string) log.Config {
	tc := t.resolved(topic)
	return log.Config{
		SegmentBytes:       tc.SegmentBytes,
		SegmentMs:          tc.SegmentMs,
		SegmentJitterMs:    tc.SegmentJitterMs,
		SegmentIndexBytes:  tc.SegmentIndexBytes,
		IndexIntervalBytes: tc.IndexIntervalBytes,
		RetentionMs:        tc.RetentionMs,
		RetentionBytes:     tc.RetentionBytes,
		FlushMessages:      tc.FlushMessages,
		FlushMs:            tc.FlushMs,
		MaxMessageBytes:    tc.MaxMessageBytes,
		LogAppendTime:      tc.LogAppendTime,
		Delete:             tc.Delete,
		FileDeleteDelayMs:  tc.FileDeleteDelayMs,
		Compact:            tc.Compact,
		// Kafka checks the bounds only for CreateTime topics; the log
		// skips them itself under LogAppendTime.
		TimestampBeforeMaxMs: tc.MessageTimestampBeforeMaxMs,
		TimestampAfterMaxMs:  tc.MessageTimestampAfterMaxMs,

		DeleteRetentionMs:      tc.DeleteRetentionMs,
		MinCompactionLagMs:     tc.MinCompactionLagMs,
		MaxCompactionLagMs:     tc.MaxCompactionLagMs,
		MinCleanableDirtyRatio: tc.MinCleanableDirtyRatio,
	}
}

func (b *Broker) topicConfig(topic string) config.Topic { return b.topics.resolved(topic) }

// watchTopicConfigs keeps the topic and dynamic broker configs current and
// pushes changes into the hosted logs, until ctx ends or the store's
// session does.
func (b *Broker) watchTopicConfigs(ctx context.Context) error {
	// Quota notifications older than the watch are purged: load first.
	b.reloadClientQuotas(ctx)
	return controller.WatchConfigs(ctx, b.store, func(entityType, name string, cfg map[string]string) {
		switch entityType {
		case controller.EntityUsers, controller.EntityClients, controller.EntityIPs:
			b.patchClientQuotas(ctx, entityType, name, cfg)
		case controller.EntityTopics:
			b.topics.set(name, cfg)
			b.replicas.UpdateConfig(name)
		case controller.EntityBrokers:
			if name == controller.DefaultBroker || name == strconv.Itoa(int(b.cfg.BrokerID)) {
				if err := b.reloadDynamicConfigs(ctx); err != nil {
					b.logger.Warn("reload dynamic broker configs", "err", err)
				}
			}
		}
	})
}
