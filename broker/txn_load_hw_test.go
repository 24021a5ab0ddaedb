package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
)

// TestTxnCoordinatorWaitsForHighWatermark: a __transaction_state leader
// with ISR {0,1} whose log end is above its HW loads the partition and
// answers COORDINATOR_LOAD_IN_PROGRESS, waiting in
// replica.Partition.WaitForHighWatermark (txnStatePartition), until the
// follower's fetch brings the HW to the loaded end; then it serves. The
// simulation drives the coordinator's step driver and the txn tests an
// in-memory partition: this is the broker's own wait.
func TestTxnCoordinatorWaitsForHighWatermark(t *testing.T) {
	const follower = 1
	tb := startBrokerWith(t, map[string]string{"transaction.state.log.num.partitions": "1"}, nil)
	if init := initTxn(t, tb, 4, "tx"); init.ErrorCode != 0 {
		t.Fatalf("init: %v", kerr.ErrorForCode(init.ErrorCode))
	}
	p := tb.leaderOf(transactionStateTopic, 0)
	st := p.State()
	leaderAndISR := func(leaderEpoch, zkVersion int32) {
		t.Helper()
		lai := kmsg.NewPtrLeaderAndISRRequest()
		ts := kmsg.NewLeaderAndISRRequestTopicState()
		ts.Topic, ts.TopicID = transactionStateTopic, p.TopicID()
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Topic, ps.Leader, ps.LeaderEpoch, ps.ZKVersion = transactionStateTopic, st.Leader, leaderEpoch, zkVersion
		ps.ISR, ps.Replicas = []int32{st.Leader, follower}, []int32{st.Leader, follower}
		ts.PartitionStates = append(ts.PartitionStates, ps)
		lai.TopicStates = append(lai.TopicStates, ts)
		if code := tb.b.replicas.ApplyLeaderAndISR(lai).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("LeaderAndISR: error %d", code)
		}
	}
	// The follower joins at the same leader epoch (no reload); a record
	// then appended stays above the HW until it fetches. Its key version
	// (5) is not transaction metadata: the load skips it.
	leaderAndISR(st.LeaderEpoch, st.ZKVersion+1)
	rec, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli()}, []batch.Record{{Key: []byte{0, 5, 0}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendAsLeader(rec, 1, 1); err != nil {
		t.Fatal(err)
	}
	leo := p.Log().LogEndOffset()
	if hw := p.HighWatermark(); hw >= leo {
		t.Fatalf("HW %d at the log end %d with the follower not fetched", hw, leo)
	}
	watchers := p.Watchers()
	// A new leader epoch reloads the coordinator's partition.
	leaderAndISR(st.LeaderEpoch+1, st.ZKVersion+2)
	testutil.Eventually(t, 30*time.Second, func() error {
		d := describeTxn(tb, "tx")
		if d.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
			t.Fatalf("describe with the HW %d below the loaded end %d: %v, want COORDINATOR_LOAD_IN_PROGRESS", p.HighWatermark(), leo, kerr.ErrorForCode(d.ErrorCode))
		}
		if n := p.Watchers(); n <= watchers {
			return fmt.Errorf("%d waits on the partition, the load's not yet among them", n)
		}
		return nil
	})
	if err := p.UpdateFollowerFetch(follower, -1, leo, 0); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if d := describeTxn(tb, "tx"); d.ErrorCode != 0 {
			return fmt.Errorf("describe after the follower's fetch: %v", kerr.ErrorForCode(d.ErrorCode))
		}
		return nil
	})
}
