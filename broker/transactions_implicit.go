package broker

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/protocol/batch"
	"github.com/brook-mq/brook/txn"
)

// A producer of transaction version 2 (KIP-890 part 2) sends no
// AddPartitionsToTxn: its Produce v12+ and TxnOffsetCommit v5+ make the
// receiving broker (the partition leader, the group coordinator) add the
// partition to the transaction itself, with AddPartitionsToTxn v4+
// without verify_only to the transaction coordinator, as Kafka's
// AddPartitionsToTxnManager does. The add runs before the append, inline
// in the connection's loop so that the producer's batches are still
// appended in request order; a partition already in the transaction is
// answered by the coordinator without a write.

// implicitAddTimeout bounds one implicit add (Kafka's request.timeout.ms
// default for the inter-broker request).
const implicitAddTimeout = 30 * time.Second

// firstTV2Produce is the version from which a transactional Produce adds
// its partitions to the transaction.
const firstTV2Produce = 12

// implicitAddCode maps the coordinator's answer to an implicit add to what
// the producer gets, as Kafka's AddPartitionsToTxnManager and
// ReplicaManager map it: a fenced epoch is INVALID_PRODUCER_EPOCH, and
// answers that only mean "not now" (no coordinator, markers of the
// previous transaction still being written) are NOT_ENOUGH_REPLICAS,
// retriable for every client.
func implicitAddCode(code int16) int16 {
	switch code {
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.ConcurrentTransactions.Code, kerr.RequestTimedOut.Code, kerr.NetworkException.Code:
		return kerr.NotEnoughReplicas.Code
	}
	return code
}

// addPartitionsForProducer adds tps to the producer's transaction through
// its coordinator, here or on the broker that leads the transactional id's
// __transaction_state partition, and returns each partition's code as the
// coordinator answered it (or NETWORK_EXCEPTION, COORDINATOR_NOT_AVAILABLE
// when it could not be asked): each caller maps them for its client.
func (b *Broker) addPartitionsForProducer(ctx context.Context, txnID string, producerID int64, epoch int16, tps []txn.TopicPartition) map[txn.TopicPartition]int16 {
	ctx, cancel := context.WithTimeout(ctx, implicitAddTimeout)
	defer cancel()
	codes := make(map[txn.TopicPartition]int16, len(tps))
	fail := func(code int16) map[txn.TopicPartition]int16 {
		for _, tp := range tps {
			codes[tp] = code
		}
		return codes
	}
	ps, ok := b.meta.partition(transactionStateTopic, b.txns.PartitionFor(txnID))
	switch {
	case !ok || ps.Leader < 0:
		return fail(kerr.CoordinatorNotAvailable.Code)
	case ps.Leader == b.cfg.BrokerID:
		return b.addPartitionsToTxn(ctx, txnID, producerID, epoch, false, txn.TV2, tps)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch = txnID, producerID, epoch
	eachTopic(tps, func(topic string, partitions []int32) {
		t := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		t.Topic, t.Partitions = topic, partitions
		tr.Topics = append(tr.Topics, t)
	})
	req.Transactions = append(req.Transactions, tr)
	raw, err := b.peers.Request(ctx, ps.Leader, "txn-add", req)
	if err != nil {
		b.logger.Debug("add partitions to transaction", "coordinator", ps.Leader, "transactional_id", txnID, "err", err)
		return fail(kerr.NetworkException.Code)
	}
	resp := raw.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return fail(resp.ErrorCode)
	}
	for _, rt := range resp.Transactions {
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				codes[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	for _, tp := range tps {
		if _, ok := codes[tp]; !ok {
			codes[tp] = kerr.CoordinatorNotAvailable.Code // not answered: ask again
		}
	}
	return codes
}

// produceTxnAdds adds to their transaction the partitions of a Produce
// v12+ that carry transactional batches and that this broker leads, and
// returns the failed ones' codes (nil when nothing failed). Older versions
// come from producers that add their partitions themselves. A topic the
// principal may not write is left out: its partitions are refused, and
// must not join the transaction.
func (b *Broker) produceTxnAdds(ctx context.Context, r *request, req *kmsg.ProduceRequest) map[txn.TopicPartition]int16 {
	if req.Version < firstTV2Produce || req.TransactionID == nil {
		return nil
	}
	var tps []txn.TopicPartition
	producerID, epoch := int64(-1), int16(-1)
	for _, rt := range req.Topics {
		topic, code := b.produceTopic(req.Version, rt)
		if code != 0 || !b.authorize(r, auth.OpWrite, auth.ResourceTopic, topic) {
			continue
		}
		for _, rp := range rt.Partitions {
			h, err := batch.ParseHeader(rp.Records)
			if err != nil || h.Magic != batch.MagicV2 || !h.Transactional() {
				continue
			}
			if _, code := b.leaderPartition(topic, rp.Partition); code != 0 {
				continue
			}
			// One request is one producer's: Kafka's client never mixes.
			producerID, epoch = h.ProducerID, h.ProducerEpoch
			tps = append(tps, txn.TopicPartition{Topic: topic, Partition: rp.Partition})
		}
	}
	if len(tps) == 0 {
		return nil
	}
	var failed map[txn.TopicPartition]int16
	for tp, code := range b.addPartitionsForProducer(ctx, *req.TransactionID, producerID, epoch, sortedTPs(tps)) {
		if code = implicitAddCode(code); code != 0 {
			if failed == nil {
				failed = map[txn.TopicPartition]int16{}
			}
			failed[tp] = code
		}
	}
	return failed
}

// sortedTPs sorts partitions by topic so that they group into the
// request's topics.
func sortedTPs(tps []txn.TopicPartition) []txn.TopicPartition {
	slices.SortFunc(tps, func(a, b txn.TopicPartition) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	return slices.Compact(tps)
}
