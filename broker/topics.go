package broker

import (
	"context"
	"time"

	"github.com/brook-mq/brook/controller"
)

// createTopics writes new topics to the metadata store, where the active
// controller picks them up. It does not wait for their leaders.
func (b *Broker) createTopics(ctx context.Context, specs []controller.TopicSpec, validateOnly bool, opts ...controller.Option) []controller.TopicResult {
	return controller.CreateTopics(ctx, b.store, specs, validateOnly, append([]controller.Option{
		controller.WithDefaults(b.cfg.NumPartitions, b.cfg.DefaultReplicationFactor),
		controller.WithConfigValidator(func(_ string, cfg map[string]string) error {
			return b.effectiveConfig().ValidateTopic(cfg)
		}),
	}, opts...)...)
}

// waitForTopics waits until the metadata cache has every partition of the
// named topics (name -> partition count) with a leader, or until timeout,
// and returns the topics still not ready. CreateTopics and CreatePartitions
// answer only then, as Kafka does, so that a client can use the partitions
// as soon as its request returns; the late ones get REQUEST_TIMED_OUT.
func (b *Broker) waitForTopics(ctx context.Context, timeout time.Duration, want map[string]int32) map[string]bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		changed := b.meta.changes()
		notReady := map[string]bool{}
		for name, n := range want {
			if !b.topicReady(name, n) {
				notReady[name] = true
			}
		}
		if len(notReady) == 0 {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return notReady
		}
	}
}

// topicReady reports whether the metadata cache has n partitions of the
// topic, each with a leader.
func (b *Broker) topicReady(name string, n int32) bool {
	t, ok := b.meta.topic(name)
	if !ok || int32(len(t.partitions)) < n {
		return false
	}
	for _, p := range t.partitions {
		if p.Leader < 0 {
			return false
		}
	}
	return true
}
