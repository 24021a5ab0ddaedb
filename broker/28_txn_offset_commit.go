package broker

// TxnOffsetCommit, key 28, versions 0-5.
//
// A transactional producer's offset commit for a consumer group: the group
// coordinator writes the offsets to __consumer_offsets in a transactional
// batch of the producer and keeps them pending until the transaction's
// marker reaches that partition (group/txn_offsets.go). v2 adds
// committed_leader_epoch, v3 the member id, generation and group instance
// id, fenced like OffsetCommit's, and is flexible; v4 may answer
// TRANSACTION_ABORTABLE. v5 comes from a producer of transaction version
// 2, which sends no AddOffsetsToTxn: the group's __consumer_offsets
// partition is added to the transaction here first
// (transactions_implicit.go), and if that fails every partition gets its
// code. With an authorizer, each topic needs READ (else
// TOPIC_AUTHORIZATION_FAILED, checked first); partitions the cluster does
// not have get UNKNOWN_TOPIC_OR_PARTITION, as in Kafka.
//
// The coordinator appends these batches as a coordinator, not a client
// (log.AppendAsCoordinator): every batch has base sequence 0, which a
// client sequence check would take for a duplicate.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/txn"
)

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, r *request, req *kmsg.TxnOffsetCommitRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	parts := func(t *kmsg.TxnOffsetCommitRequestTopic) (string, *[]kmsg.TxnOffsetCommitRequestTopicPartition) {
		return t.Topic, &t.Partitions
	}
	id := func(p kmsg.TxnOffsetCommitRequestTopicPartition) int32 { return p.Partition }
	known, refused := readableKnownPartitions(b, r, req.Topics, parts, id)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	return reply{wait: func() kmsg.Response {
		if len(known) > 0 {
			req.Topics = known
			if code := b.txnOffsetCommitAdd(ctx, req); code != 0 {
				resp.Topics = txnOffsetCommitFailed(known, code)
			} else {
				resp = b.groups.TxnOffsetCommit(r.groupContext(ctx), req)
			}
		}
		eachRefused(refused, func(topic string, ids []int32, code int16) {
			t := kmsg.NewTxnOffsetCommitResponseTopic()
			t.Topic = topic
			for _, id := range ids {
				p := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				p.Partition, p.ErrorCode = id, code
				t.Partitions = append(t.Partitions, p)
			}
			resp.Topics = append(resp.Topics, t)
		})
		return resp
	}}, nil
}

// txnOffsetCommitAdd adds the group's offsets partition to the
// transaction of a TxnOffsetCommit v5+ and returns the code that fails
// the commit, 0 when it may go on.
func (b *Broker) txnOffsetCommitAdd(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) int16 {
	if req.Version < 5 {
		return 0
	}
	tp := b.txns.OffsetsPartition(req.Group)
	return txnOffsetCommitAddCode(b.addPartitionsForProducer(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TopicPartition{tp})[tp])
}

// txnOffsetCommitAddCode maps the coordinator's answer to the implicit add
// of a TxnOffsetCommit v5+ as Kafka's group coordinator answers a failed
// verification (GroupCoordinatorService's handleOperationException): a
// transient failure is COORDINATOR_LOAD_IN_PROGRESS or
// COORDINATOR_NOT_AVAILABLE, which clients retry (franz-go aborts and
// retries the transaction), never Produce's NOT_ENOUGH_REPLICAS, which
// they take for fatal on this request.
func txnOffsetCommitAddCode(code int16) int16 {
	switch code {
	case kerr.NetworkException.Code:
		return kerr.CoordinatorLoadInProgress.Code
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.ConcurrentTransactions.Code, kerr.RequestTimedOut.Code, kerr.NotEnoughReplicas.Code,
		kerr.UnknownTopicOrPartition.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	}
	return implicitAddCode(code)
}

func txnOffsetCommitFailed(topics []kmsg.TxnOffsetCommitRequestTopic, code int16) []kmsg.TxnOffsetCommitResponseTopic {
	out := make([]kmsg.TxnOffsetCommitResponseTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
