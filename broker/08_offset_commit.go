package broker

// OffsetCommit, key 8, versions 2-8.
//
// Commits go to the group's coordinator, which appends them to its
// __consumer_offsets partition and answers once they are committed there.
// Generation -1 with an empty member id is a simple consumer's commit to
// an empty group. v3 adds throttle_time_ms, v5 drops retention_time_ms, v6
// adds committed_leader_epoch, v7 group_instance_id, v8 is flexible.
// Partitions the cluster does not have get UNKNOWN_TOPIC_OR_PARTITION and
// are not stored, as in Kafka. Applied synchronously: a later OffsetFetch on
// the same connection sees it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleOffsetCommit(ctx context.Context, r *request, req *kmsg.OffsetCommitRequest) (reply, error) {
	parts := func(t *kmsg.OffsetCommitRequestTopic) (string, *[]kmsg.OffsetCommitRequestTopicPartition) {
		return t.Topic, &t.Partitions
	}
	id := func(p kmsg.OffsetCommitRequestTopicPartition) int32 { return p.Partition }
	// READ on the group, then on each topic, as Kafka checks them.
	groupOK := b.authorize(r, auth.OpRead, auth.ResourceGroup, req.Group)
	allowed, denied := splitPartitions(req.Topics, parts, id, func(topic string, _ int32) bool {
		return !groupOK || !b.authorize(r, auth.OpRead, auth.ResourceTopic, topic)
	})
	known, unknown := knownPartitions(b, allowed, parts, id)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	if len(known) > 0 {
		req.Topics = known
		resp = b.groups.OffsetCommit(r.groupContext(ctx), req)
	}
	deniedCode := kerr.TopicAuthorizationFailed.Code
	if !groupOK {
		deniedCode = kerr.GroupAuthorizationFailed.Code
	}
	for _, failed := range []struct {
		parts map[string][]int32
		code  int16
	}{{unknown, kerr.UnknownTopicOrPartition.Code}, {denied, deniedCode}} {
		for topic, ids := range failed.parts {
			t := kmsg.NewOffsetCommitResponseTopic()
			t.Topic = topic
			for _, id := range ids {
				p := kmsg.NewOffsetCommitResponseTopicPartition()
				p.Partition, p.ErrorCode = id, failed.code
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
	}
	return respond(resp)
}
