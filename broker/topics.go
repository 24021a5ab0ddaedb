package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/quota"
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

// replyWhenTopicsReady is how CreateTopics and CreatePartitions answer:
// at once when nothing was created or the client set no timeout, else once
// the wanted topics are ready (waitForTopics), with REQUEST_TIMED_OUT on
// the late ones (timedOut marks them) and the mutation throttle of the
// moment in throttleMs.
func (b *Broker) replyWhenTopicsReady(ctx context.Context, resp kmsg.Response, timeoutMillis int32, want map[string]int32,
	mutations *quota.MutationQuota, throttleMs *int32, timedOut func(late map[string]bool, code int16)) reply {
	var throttle time.Duration
	throttle, *throttleMs = mutationThrottle(mutations)
	if len(want) == 0 || timeoutMillis <= 0 {
		return reply{resp: resp, throttle: throttle}
	}
	timeout := time.Duration(timeoutMillis) * time.Millisecond
	return reply{wait: func() kmsg.Response {
		if late := b.waitForTopics(ctx, timeout, want); len(late) > 0 {
			timedOut(late, kerr.RequestTimedOut.Code)
		}
		_, *throttleMs = mutationThrottle(mutations)
		return resp
	}, throttle: throttle}
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
