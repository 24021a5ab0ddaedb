package broker

// AddPartitionsToTxn, key 24, versions 0-5.
//
// v0-3 come from producers: one transaction, one error code for all its
// partitions. v2 introduced PRODUCER_FENCED (older versions get
// INVALID_PRODUCER_EPOCH), v3 is flexible. v4 (KIP-890 part 1) batches
// transactions and is sent by partition leaders; a transaction with
// verify_only asks whether its partitions are in the ongoing transaction
// and changes nothing; one without adds them for a producer of
// transaction version 2, which sends no AddPartitionsToTxn itself (Kafka
// takes every v4+ add as TV2). v5 answers a partition that is not in the
// transaction with TRANSACTION_ABORTABLE instead of INVALID_TXN_STATE.
//
// Partitions of topics this broker does not know get
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, as
// Kafka answers.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/txn"
)

func (b *Broker) handleAddPartitionsToTxn(ctx context.Context, r *request, req *kmsg.AddPartitionsToTxnRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		return reply{wait: func() kmsg.Response {
			codes := b.addPartitionsToTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, txn.TV0, v3Topics(req.Topics))
			for _, t := range req.Topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition = p
					rp.ErrorCode = fencedForVersion(codes[txn.TopicPartition{Topic: t.Topic, Partition: p}], req.Version, 2)
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}}, nil
	}
	return reply{wait: func() kmsg.Response {
		for _, tr := range req.Transactions {
			var tps []txn.TopicPartition
			for _, t := range tr.Topics {
				for _, p := range t.Partitions {
					tps = append(tps, txn.TopicPartition{Topic: t.Topic, Partition: p})
				}
			}
			codes := b.addPartitionsToTxn(ctx, tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly, txn.TV2, tps)
			rtr := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rtr.TransactionalID = tr.TransactionalID
			for _, t := range tr.Topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					rp.Partition = p
					rp.ErrorCode = codes[txn.TopicPartition{Topic: t.Topic, Partition: p}]
					if tr.VerifyOnly && req.Version >= 5 && rp.ErrorCode == kerr.InvalidTxnState.Code {
						rp.ErrorCode = kerr.TransactionAbortable.Code
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				rtr.Topics = append(rtr.Topics, rt)
			}
			resp.Transactions = append(resp.Transactions, rtr)
		}
		return resp
	}}, nil
}

func v3Topics(topics []kmsg.AddPartitionsToTxnRequestTopic) []txn.TopicPartition {
	var tps []txn.TopicPartition
	for _, t := range topics {
		for _, p := range t.Partitions {
			tps = append(tps, txn.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return tps
}

// addPartitionsToTxn checks that the partitions exist and runs one
// transaction's add (or verification); it returns each partition's code.
func (b *Broker) addPartitionsToTxn(ctx context.Context, txnID string, producerID int64, epoch int16, verifyOnly bool, tv int16, tps []txn.TopicPartition) map[txn.TopicPartition]int16 {
	codes := make(map[txn.TopicPartition]int16, len(tps))
	unknown := false
	for _, tp := range tps {
		if _, ok := b.meta.partition(tp.Topic, tp.Partition); !ok {
			codes[tp] = kerr.UnknownTopicOrPartition.Code
			unknown = true
		}
	}
	if unknown {
		for _, tp := range tps {
			if codes[tp] == 0 {
				codes[tp] = kerr.OperationNotAttempted.Code
			}
		}
		return codes
	}
	if verifyOnly {
		return b.txns.VerifyPartitions(txnID, producerID, epoch, tps)
	}
	code := b.txns.AddPartitions(ctx, txnID, producerID, epoch, tps, tv)
	for _, tp := range tps {
		codes[tp] = code
	}
	return codes
}
