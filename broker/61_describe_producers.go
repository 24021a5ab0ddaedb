package broker

// DescribeProducers, key 61, version 0 (KIP-664; Kafka 3.9 serves 0 only).
//
// Each partition's leader lists the producers its log keeps state for, as
// Kafka's ReplicaManager.activeProducerState: id, epoch, last sequence,
// last timestamp, the coordinator epoch of the last marker and the first
// offset of the open transaction (-1 for none). kafka-transactions uses it
// to find hanging transactions and the epochs to abort one with. A
// partition the cluster lacks is UNKNOWN_TOPIC_OR_PARTITION, one this
// broker does not lead NOT_LEADER_OR_FOLLOWER.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleDescribeProducers(_ context.Context, r *request, req *kmsg.DescribeProducersRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			part, code := b.leaderPartition(rt.Topic, p)
			if !b.authorize(r, auth.OpRead, auth.ResourceTopic, rt.Topic) {
				part, code = nil, kerr.TopicAuthorizationFailed.Code
			}
			sp.ErrorCode = code
			if part != nil {
				for _, a := range part.Log().ActiveProducers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = a.ProducerID, int32(a.ProducerEpoch), a.LastSequence
					ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = a.LastTimestamp, a.CoordinatorEpoch, a.CurrentTxnStartOffset
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return respond(resp)
}
