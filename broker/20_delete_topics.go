package broker

// DeleteTopics, key 20, versions 0-6.
//
// v5 adds error messages, v6 names topics by name or by id (both or
// neither: INVALID_REQUEST; unknown id: UNKNOWN_TOPIC_ID). Only the active
// controller serves it. delete.topic.enable=false answers
// TOPIC_DELETION_DISABLED; internal topics are refused. The answer waits,
// up to timeout_ms, until the topics are gone from this broker's metadata.
// controller_mutation_rate applies (mutation_quota.go), strictly from v5.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/controller"
)

func (b *Broker) handleDeleteTopics(ctx context.Context, r *request, req *kmsg.DeleteTopicsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	type ask struct {
		name *string
		id   [16]byte
	}
	var asks []ask
	if req.Version >= 6 {
		for _, t := range req.Topics {
			asks = append(asks, ask{t.Topic, t.TopicID})
		}
	} else {
		for _, n := range req.TopicNames {
			asks = append(asks, ask{name: &n})
		}
	}
	resp.Topics = make([]kmsg.DeleteTopicsResponseTopic, len(asks))
	var names []string
	var index []int
	for i, a := range asks {
		st := &resp.Topics[i]
		*st = kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = a.name, a.id
		fail := func(err *kerr.Error, msg string) {
			st.ErrorCode = err.Code
			st.ErrorMessage = &msg
		}
		switch {
		case !b.isActiveController():
			fail(kerr.NotController, "this broker is not the active controller")
			continue
		case !b.cfg.DeleteTopicEnable:
			fail(kerr.TopicDeletionDisabled, "topic deletion is disabled (delete.topic.enable=false)")
			continue
		case a.name != nil && a.id != [16]byte{}:
			fail(kerr.InvalidRequest, "name a topic by its name or by its id, not both")
			continue
		case a.name == nil:
			t, ok := b.meta.topicByID(a.id)
			if !ok {
				fail(kerr.UnknownTopicID, "no topic with this id")
				continue
			}
			name := t.name
			st.Topic = &name
		}
		if !b.authorize(r, auth.OpDelete, auth.ResourceTopic, *st.Topic) {
			fail(kerr.TopicAuthorizationFailed, kerr.TopicAuthorizationFailed.Message)
			continue
		}
		if isInternalTopic(*st.Topic) {
			fail(kerr.InvalidTopicException, "internal topics cannot be deleted")
			continue
		}
		names = append(names, *st.Topic)
		index = append(index, i)
	}
	mutations := b.mutationQuota(r, req.Version, deleteTopicsStrictSince)
	pending := map[string]bool{}
	for k, res := range controller.DeleteTopics(ctx, b.store, names, mutationOption(mutations)) {
		st := &resp.Topics[index[k]]
		if req.Version >= 6 {
			st.TopicID = res.TopicID
		}
		st.ErrorCode = res.ErrorCode
		if res.ErrorCode != 0 {
			msg := res.ErrorMessage
			st.ErrorMessage = &msg
			continue
		}
		pending[res.Name] = true
	}
	var throttle time.Duration
	throttle, resp.ThrottleMillis = mutationThrottle(mutations)
	if len(pending) == 0 || req.TimeoutMillis <= 0 {
		return reply{resp: resp, throttle: throttle}, nil
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	return reply{throttle: throttle, wait: func() kmsg.Response {
		defer func() { _, resp.ThrottleMillis = mutationThrottle(mutations) }()
		if b.waitForDeletion(ctx, timeout, pending) {
			return resp
		}
		for i := range resp.Topics {
			if n := resp.Topics[i].Topic; n != nil && pending[*n] {
				if !b.topicsGone(ctx, map[string]bool{*n: true}) {
					resp.Topics[i].ErrorCode = kerr.RequestTimedOut.Code
				}
			}
		}
		return resp
	}}, nil
}

// deletionPoll is how often a DeleteTopics answer rechecks the store for
// the topic's znode, which the controller removes after telling brokers.
const deletionPoll = 20 * time.Millisecond

// waitForDeletion waits until none of names is in the metadata cache or
// still has its /brokers/topics znode. Kafka answers once the metadata
// drops the topic, and a CreateTopics for the same name right after can
// still find the znode (TOPIC_ALREADY_EXISTS); waiting for the znode too
// lets scripts delete and re-create a topic back to back.
func (b *Broker) waitForDeletion(ctx context.Context, timeout time.Duration, names map[string]bool) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(deletionPoll)
	defer ticker.Stop()
	for {
		changed := b.meta.changes()
		if b.topicsGone(ctx, names) {
			return true
		}
		select {
		case <-changed:
		case <-ticker.C:
		case <-ctx.Done():
			return false
		}
	}
}

func (b *Broker) topicsGone(ctx context.Context, names map[string]bool) bool {
	for n := range names {
		if _, ok := b.meta.topic(n); ok {
			return false
		}
		if exists, _, err := b.store.Exists(ctx, controller.TopicPath(n)); err != nil || exists {
			return false
		}
	}
	return true
}
