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

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleOffsetDelete(ctx context.Context, r *request, req *kmsg.OffsetDeleteRequest) (reply, error) {
	if !b.authorize(r, auth.OpDelete, auth.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	parts := func(t *kmsg.OffsetDeleteRequestTopic) (string, *[]kmsg.OffsetDeleteRequestTopicPartition) {
		return t.Topic, &t.Partitions
	}
	id := func(p kmsg.OffsetDeleteRequestTopicPartition) int32 { return p.Partition }
	known, refused := readableKnownPartitions(b, r, req.Topics, parts, id)
	req.Topics = known
	resp := b.groups.OffsetDelete(r.groupContext(ctx), req)
	eachRefused(refused, func(topic string, ids []int32, code int16) {
		t := kmsg.NewOffsetDeleteResponseTopic()
		t.Topic = topic
		for _, id := range ids {
			p := kmsg.NewOffsetDeleteResponseTopicPartition()
			p.Partition, p.ErrorCode = id, code
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	})
	return respond(resp)
}
