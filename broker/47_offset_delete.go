package broker

// OffsetDelete, key 47, versions 0.
//
// Deletes committed offsets of partitions the group no longer consumes
// (GROUP_SUBSCRIBED_TO_TOPIC otherwise). Partitions the cluster does not
// have get UNKNOWN_TOPIC_OR_PARTITION, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleOffsetDelete(ctx context.Context, r *request, req *kmsg.OffsetDeleteRequest) (reply, error) {
	known, unknown := knownPartitions(b, req.Topics,
		func(t *kmsg.OffsetDeleteRequestTopic) (string, *[]kmsg.OffsetDeleteRequestTopicPartition) {
			return t.Topic, &t.Partitions
		},
		func(p kmsg.OffsetDeleteRequestTopicPartition) int32 { return p.Partition })
	req.Topics = known
	resp := b.groups.OffsetDelete(r.groupContext(ctx), req)
	for topic, ids := range unknown {
		t := kmsg.NewOffsetDeleteResponseTopic()
		t.Topic = topic
		for _, id := range ids {
			p := kmsg.NewOffsetDeleteResponseTopicPartition()
			p.Partition, p.ErrorCode = id, kerr.UnknownTopicOrPartition.Code
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return respond(resp)
}
