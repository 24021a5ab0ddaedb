package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/coordhash"
	"github.com/brook-mq/brook/protocol/batch"
)

// Transaction version 2 (KIP-890 part 2) as a Kafka 4.x producer speaks
// it, in raw requests at pinned versions: no AddPartitionsToTxn, Produce
// v12, EndTxn v5.

// txnBatch is one transactional batch of the producer.
func txnBatch(t *testing.T, pid int64, epoch int16, seq int32) []byte {
	t.Helper()
	b, err := batch.Build(batch.BuildOptions{
		Transactional: true,
		Producer:      &batch.Producer{ID: pid, Epoch: epoch, BaseSequence: seq},
	}, []batch.Record{{Key: []byte("k"), Value: []byte("v")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func produceTxnRaw(t *testing.T, tb *testBroker, version int16, txnID, topic string, partition int32, records []byte) int16 {
	t.Helper()
	return produceRawAt(t, tb, version, topic, partition, -1, records, kmsg.StringPtr(txnID)).ErrorCode
}

func endTxnV5(tb *testBroker, txnID string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(5)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txnID, pid, epoch, commit
	return tb.roundTrip(req).(*kmsg.EndTxnResponse)
}

func txnPartitions(d kmsg.DescribeTransactionsResponseTransactionState) []string {
	var out []string
	for _, t := range d.Topics {
		for _, p := range t.Partitions {
			out = append(out, fmt.Sprintf("%s-%d", t.Topic, p))
		}
	}
	slices.Sort(out)
	return out
}

func startTV2Broker(t *testing.T) *testBroker {
	t.Helper()
	tb := startBrokerWith(t, map[string]string{"transaction.state.log.num.partitions": "3"}, nil)
	tb.createTopic("tv2", 2, nil)
	return tb
}

// TestTV2ProduceJoinsTransaction: a transactional Produce v12 adds its
// partition to the transaction without AddPartitionsToTxn; Produce v11
// still does not (its producer adds partitions itself).
func TestTV2ProduceJoinsTransaction(t *testing.T) {
	tb := startTV2Broker(t)
	init := initTxn(t, tb, 5, "tx")
	pid, epoch := init.ProducerID, init.ProducerEpoch
	wantCode(t, "produce v12", produceTxnRaw(t, tb, 12, "tx", "tv2", 0, txnBatch(t, pid, epoch, 0)), noError)
	d := waitTxnState(t, tb, "tx", "Ongoing")
	if got := txnPartitions(d); !slices.Equal(got, []string{"tv2-0"}) {
		t.Fatalf("partitions in the transaction %v, want tv2-0", got)
	}

	// A v11 producer adds its partitions itself: the leader adds nothing.
	init2 := initTxn(t, tb, 5, "v11")
	wantCode(t, "produce v11", produceTxnRaw(t, tb, 11, "v11", "tv2", 1, txnBatch(t, init2.ProducerID, init2.ProducerEpoch, 0)), noError)
	if d := describeTxn(tb, "v11"); d.State != "Empty" || len(d.Topics) != 0 {
		t.Fatalf("v11 produce changed the transaction: %s %+v", d.State, d.Topics)
	}
}

// TestTV2EndTxnBumpsEpochAndFencesOldEpoch: EndTxn v5 answers the bumped
// epoch; the markers carry it, so a write at the old epoch is fenced both
// by the coordinator (a partition the transaction did not have) and by
// the partition leader (one it had); a retried EndTxn gets the same
// answer; the next transaction runs at the new epoch.
func TestTV2EndTxnBumpsEpochAndFencesOldEpoch(t *testing.T) {
	tb := startTV2Broker(t)
	init := initTxn(t, tb, 5, "tx")
	pid, e0 := init.ProducerID, init.ProducerEpoch
	wantCode(t, "produce", produceTxnRaw(t, tb, 12, "tx", "tv2", 0, txnBatch(t, pid, e0, 0)), noError)

	end := endTxnV5(tb, "tx", pid, e0, true)
	if end.ErrorCode != 0 || end.ProducerID != pid || end.ProducerEpoch != e0+1 {
		t.Fatalf("EndTxn v5: %v producer %d epoch %d, want producer %d epoch %d", kerr.ErrorForCode(end.ErrorCode), end.ProducerID, end.ProducerEpoch, pid, e0+1)
	}
	if d := waitTxnState(t, tb, "tx", "CompleteCommit"); d.ProducerEpoch != e0+1 {
		t.Fatalf("described epoch %d, want %d", d.ProducerEpoch, e0+1)
	}
	retry := endTxnV5(tb, "tx", pid, e0, true)
	if retry.ErrorCode != 0 || retry.ProducerID != pid || retry.ProducerEpoch != e0+1 {
		t.Fatalf("retried EndTxn: %v epoch %d", kerr.ErrorForCode(retry.ErrorCode), retry.ProducerEpoch)
	}

	wantCode(t, "old epoch, new partition", produceTxnRaw(t, tb, 12, "tx", "tv2", 1, txnBatch(t, pid, e0, 0)), kerr.InvalidProducerEpoch)
	wantCode(t, "old epoch, marked partition", produceTxnRaw(t, tb, 12, "tx", "tv2", 0, txnBatch(t, pid, e0, 1)), kerr.InvalidProducerEpoch)
	if d := describeTxn(tb, "tx"); d.State != "CompleteCommit" {
		t.Fatalf("fenced writes changed the transaction: %s", d.State)
	}

	wantCode(t, "next transaction", produceTxnRaw(t, tb, 12, "tx", "tv2", 0, txnBatch(t, pid, e0+1, 0)), noError)
	abort := endTxnV5(tb, "tx", pid, e0+1, false)
	if abort.ErrorCode != 0 || abort.ProducerEpoch != e0+2 {
		t.Fatalf("abort: %v epoch %d, want %d", kerr.ErrorForCode(abort.ErrorCode), abort.ProducerEpoch, e0+2)
	}
	waitTxnState(t, tb, "tx", "CompleteAbort")
	// Below v5 the answer carries no producer: a v4 EndTxn is a TV1
	// client's, whose epoch must be the current one.
	req := kmsg.NewPtrEndTxnRequest()
	req.SetVersion(4)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "tx", pid, e0+2, false
	if r := tb.roundTrip(req).(*kmsg.EndTxnResponse); r.ErrorCode != 0 || r.ProducerID != -1 || r.ProducerEpoch != -1 {
		t.Fatalf("EndTxn v4 retry of the abort: %v producer %d epoch %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ProducerEpoch)
	}
}

// TestTV2TxnOffsetCommitJoinsTransaction: TxnOffsetCommit v5 adds the
// group's __consumer_offsets partition without AddOffsetsToTxn; v4 does
// not.
func TestTV2TxnOffsetCommitJoinsTransaction(t *testing.T) {
	tb := startTV2Broker(t)
	readyCoordinator(t, tb, "g")
	init := initTxn(t, tb, 5, "tx")
	commit := func(version int16) int16 {
		return txnOffsetCommitRaw(tb, version, "tx", init.ProducerID, init.ProducerEpoch, "g")
	}
	wantCode(t, "TxnOffsetCommit v4", commit(4), noError)
	if d := describeTxn(tb, "tx"); d.State != "Empty" {
		t.Fatalf("v4 commit changed the transaction: %s", d.State)
	}
	wantCode(t, "TxnOffsetCommit v5", commit(5), noError)
	d := waitTxnState(t, tb, "tx", "Ongoing")
	want := coordhash.PartitionFor("g", 4) // offsets.topic.num.partitions in tests
	if len(d.Topics) != 1 || d.Topics[0].Topic != "__consumer_offsets" || len(d.Topics[0].Partitions) != 1 || d.Topics[0].Partitions[0] != want {
		t.Fatalf("transaction partitions %+v, want __consumer_offsets-%d", d.Topics, want)
	}
	end := endTxnV5(tb, "tx", init.ProducerID, init.ProducerEpoch, true)
	if end.ErrorCode != 0 || end.ProducerEpoch != init.ProducerEpoch+1 {
		t.Fatalf("commit: %v epoch %d", kerr.ErrorForCode(end.ErrorCode), end.ProducerEpoch)
	}
	waitTxnState(t, tb, "tx", "CompleteCommit")
}

// txnOffsetCommitRaw commits offset 5 of tv2-0 for group in the producer's
// transaction at version and returns the partition's code.
func txnOffsetCommitRaw(tb *testBroker, version int16, txnID string, pid int64, epoch int16, group string) int16 {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.SetVersion(version)
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = txnID, pid, epoch, group
	req.Generation = -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "tv2"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 5
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return tb.roundTrip(req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// TestTV2ProduceErrors: what a Produce v12 gets when its transaction
// cannot take the partition: an unknown transactional id is
// INVALID_PRODUCER_ID_MAPPING, and while the previous transaction's
// markers are still being written the coordinator's
// CONCURRENT_TRANSACTIONS reaches the producer as the retriable
// NOT_ENOUGH_REPLICAS, as Kafka maps it, and a TxnOffsetCommit v5 as
// COORDINATOR_NOT_AVAILABLE, as Kafka's group coordinator maps it (clients
// take NOT_ENOUGH_REPLICAS for fatal there); once the markers are written
// the same produce goes through.
func TestTV2ProduceErrors(t *testing.T) {
	release := make(chan struct{})
	tb := startBrokerWith(t, map[string]string{"transaction.state.log.num.partitions": "3"}, func(b *Broker) {
		real := b.handlers[27]
		b.handlers[27] = handler{real.min, real.max, func(ctx context.Context, r *request, req kmsg.Request) (reply, error) {
			rep, err := real.fn(ctx, r, req)
			if err != nil {
				return rep, err
			}
			return reply{wait: func() kmsg.Response {
				<-release
				if rep.wait != nil {
					return rep.wait()
				}
				return rep.resp
			}}, nil
		}}
	})
	var once sync.Once
	releaseMarkers := func() { once.Do(func() { close(release) }) }
	t.Cleanup(releaseMarkers) // before the broker stops
	tb.createTopic("tv2", 2, nil)
	readyCoordinator(t, tb, "g")
	init := initTxn(t, tb, 5, "tx")
	pid, e0 := init.ProducerID, init.ProducerEpoch
	wantCode(t, "unknown transactional id", produceTxnRaw(t, tb, 12, "nope", "tv2", 0, txnBatch(t, pid, e0, 0)), kerr.InvalidProducerIDMapping)

	wantCode(t, "produce", produceTxnRaw(t, tb, 12, "tx", "tv2", 0, txnBatch(t, pid, e0, 0)), noError)
	if end := endTxnV5(tb, "tx", pid, e0, true); end.ErrorCode != 0 || end.ProducerEpoch != e0+1 {
		t.Fatalf("commit: %v epoch %d", kerr.ErrorForCode(end.ErrorCode), end.ProducerEpoch)
	}
	wantCode(t, "next transaction while markers are written", produceTxnRaw(t, tb, 12, "tx", "tv2", 1, txnBatch(t, pid, e0+1, 0)), kerr.NotEnoughReplicas)
	wantCode(t, "offsets of the next transaction while markers are written", txnOffsetCommitRaw(tb, 5, "tx", pid, e0+1, "g"), kerr.CoordinatorNotAvailable)
	releaseMarkers()
	waitTxnState(t, tb, "tx", "CompleteCommit")
	wantCode(t, "next transaction", produceTxnRaw(t, tb, 12, "tx", "tv2", 1, txnBatch(t, pid, e0+1, 0)), noError)
}
