package broker

// TxnOffsetCommit, key 28, versions 0-3.
//
// A transactional producer's offset commit for a consumer group: the group
// coordinator writes the offsets to __consumer_offsets in a transactional
// batch of the producer and keeps them pending until the transaction's
// marker reaches that partition (group/txn_offsets.go). v2 adds
// committed_leader_epoch, v3 the member id, generation and group instance
// id, fenced like OffsetCommit's, and is flexible. Partitions the cluster
// does not have get UNKNOWN_TOPIC_OR_PARTITION, as in Kafka.
//
// The coordinator appends these batches as a coordinator, not a client
// (log.AppendAsCoordinator): every batch has base sequence 0, which a
// client sequence check would take for a duplicate.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, r *request, req *kmsg.TxnOffsetCommitRequest) (reply, error) {
	known, unknown := knownPartitions(b, req.Topics,
		func(t *kmsg.TxnOffsetCommitRequestTopic) (string, *[]kmsg.TxnOffsetCommitRequestTopicPartition) {
			return t.Topic, &t.Partitions
		},
		func(p kmsg.TxnOffsetCommitRequestTopicPartition) int32 { return p.Partition })
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	return reply{wait: func() kmsg.Response {
		if len(known) > 0 {
			req.Topics = known
			resp = b.groups.TxnOffsetCommit(r.groupContext(ctx), req)
		}
		for topic, ids := range unknown {
			t := kmsg.NewTxnOffsetCommitResponseTopic()
			t.Topic = topic
			for _, id := range ids {
				p := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				p.Partition, p.ErrorCode = id, kerr.UnknownTopicOrPartition.Code
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp
	}}, nil
}
