package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// describeProducers sends DescribeProducers v0 for topic's partitions.
func (tb *testBroker) describeProducers(topic string, partitions ...int32) []kmsg.DescribeProducersResponseTopicPartition {
	tb.t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, partitions
	req.Topics = append(req.Topics, rt)
	return tb.roundTrip(req).(*kmsg.DescribeProducersResponse).Topics[0].Partitions
}

// TestDescribeProducers: the leader reports a hanging transaction (a
// transactional batch no coordinator ends) with its start offset, the
// admin's abort (WriteTxnMarkers with the coordinator epoch described)
// ends it, after which the producer shows no open transaction and the
// marker's coordinator epoch; unknown partitions are
// UNKNOWN_TOPIC_OR_PARTITION.
func TestDescribeProducers(t *testing.T) {
	tb := txnBroker(t, nil)
	tb.createTopic("d", 2, nil)
	tb.leaderOf("d", 0)
	tb.leaderOf("d", 1)
	txnID := "tx"
	if code, _ := tb.produceRaw("d", nil, txnRecords(t, -1, -1, false, "a", "b")); code != 0 {
		t.Fatalf("plain produce: %v", kerr.ErrorForCode(code))
	}
	if code, _ := tb.produceRaw("d", &txnID, txnRecords(t, 42, 0, true, "x", "y", "z")); code != 0 {
		t.Fatalf("transactional produce: %v", kerr.ErrorForCode(code))
	}
	ps := tb.describeProducers("d", 0, 1, 7)
	if len(ps) != 3 {
		t.Fatalf("partitions %+v", ps)
	}
	wantCode(t, "partition 0", ps[0].ErrorCode, &kerr.Error{Code: 0})
	wantCode(t, "partition 1", ps[1].ErrorCode, &kerr.Error{Code: 0})
	wantCode(t, "partition 7", ps[2].ErrorCode, kerr.UnknownTopicOrPartition)
	if len(ps[1].ActiveProducers) != 0 {
		t.Fatalf("partition 1 producers %+v", ps[1].ActiveProducers)
	}
	if len(ps[0].ActiveProducers) != 1 {
		t.Fatalf("partition 0 producers %+v", ps[0].ActiveProducers)
	}
	a := ps[0].ActiveProducers[0]
	if a.ProducerID != 42 || a.ProducerEpoch != 0 || a.LastSequence != 2 || a.CoordinatorEpoch != -1 || a.CurrentTxnStartOffset != 2 || a.LastTimestamp <= 0 {
		t.Fatalf("producer %+v, want id 42 epoch 0 last sequence 2 coordinator epoch -1 txn start 2", a)
	}
	wantCode(t, "unknown topic", tb.describeProducers("nope", 0)[0].ErrorCode, kerr.UnknownTopicOrPartition)

	// What kafka-transactions abort sends: the described epochs.
	if p := tb.leaderOf("d", 0); p.LastStableOffset() != 2 {
		t.Fatalf("last stable offset %d before the abort, want 2", p.LastStableOffset())
	}
	wantCode(t, "abort", tb.writeMarker(a.ProducerID, int16(a.ProducerEpoch), a.CoordinatorEpoch, false, "d", 0)[0], &kerr.Error{Code: 0})
	a = tb.describeProducers("d", 0)[0].ActiveProducers[0]
	if a.CurrentTxnStartOffset != -1 {
		t.Fatalf("producer %+v still has a transaction open after the abort", a)
	}
	if p := tb.leaderOf("d", 0); p.LastStableOffset() != 6 {
		t.Fatalf("last stable offset %d after the abort, want 6 (past the marker)", p.LastStableOffset())
	}
}

// TestDescribeProducersNotLeader: on a replicated partition the leader
// describes its producers and a follower answers NOT_LEADER_OR_FOLLOWER,
// from which the admin client goes to the leader.
func TestDescribeProducersNotLeader(t *testing.T) {
	c := startReplCluster(t)
	ctx := testContext(t)
	const topic = "rdesc"
	leader := c.createReplicated(ctx, kadm.NewClient(c.client()), topic, nil)
	if _, err := c.brokers[leader].leaderOf(topic, 0).AppendAsLeader(txnRecords(t, 31, 0, true, "v"), 1, 1); err != nil {
		t.Fatal(err)
	}
	// The leader's replica exists before its metadata cache has the topic
	// (UpdateMetadata follows LeaderAndIsr), and DescribeProducers answers
	// from the cache first.
	var ps []kmsg.DescribeProducersResponseTopicPartition
	testutil.Eventually(t, 30*time.Second, func() error {
		ps = c.brokers[leader].describeProducers(topic, 0)
		if code := ps[0].ErrorCode; code == kerr.UnknownTopicOrPartition.Code {
			return fmt.Errorf("leader answered %v", kerr.ErrorForCode(code))
		}
		return nil
	})
	wantCode(t, "leader", ps[0].ErrorCode, &kerr.Error{Code: 0})
	if len(ps[0].ActiveProducers) != 1 || ps[0].ActiveProducers[0].ProducerID != 31 || ps[0].ActiveProducers[0].CurrentTxnStartOffset != 0 {
		t.Fatalf("leader producers %+v, want producer 31 open at offset 0", ps[0].ActiveProducers)
	}
	follower := c.brokers[leader%3+1]
	testutil.Eventually(t, 30*time.Second, func() error {
		if code := follower.describeProducers(topic, 0)[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
			return fmt.Errorf("follower answered %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
		}
		return nil
	})
}
