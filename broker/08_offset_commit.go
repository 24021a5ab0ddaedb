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
)

func (b *Broker) handleOffsetCommit(ctx context.Context, r *request, req *kmsg.OffsetCommitRequest) (reply, error) {
	known, unknown := knownPartitions(b, req.Topics,
		func(t *kmsg.OffsetCommitRequestTopic) (string, *[]kmsg.OffsetCommitRequestTopicPartition) {
			return t.Topic, &t.Partitions
		},
		func(p kmsg.OffsetCommitRequestTopicPartition) int32 { return p.Partition })
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	if len(known) > 0 {
		req.Topics = known
		resp = b.groups.OffsetCommit(r.groupContext(ctx), req)
	}
	for topic, ids := range unknown {
		t := kmsg.NewOffsetCommitResponseTopic()
		t.Topic = topic
		for _, id := range ids {
			p := kmsg.NewOffsetCommitResponseTopicPartition()
			p.Partition, p.ErrorCode = id, kerr.UnknownTopicOrPartition.Code
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return respond(resp)
}
