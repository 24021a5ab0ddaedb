package replica

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestNewLeaderRecordsEpochStart: a broker that becomes leader records
// where its epoch starts (Kafka's maybeAssignEpochStartOffset), so that
// OffsetForLeaderEpoch for that epoch answers (epoch, LEO) before anything
// is written in it, and an epoch between its last and the new one ends
// where the new one starts.
func TestNewLeaderRecordsEpochStart(t *testing.T) {
	f := newFixture(t, State{Leader: -1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	appendEpoch(t, f.p.Log(), 1, "a", "b")
	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 1})
	l := f.p.Log()
	if e, o := l.EndOffsetForEpoch(3); e != 3 || o != 2 {
		t.Fatalf("current epoch 3 ends at (%d, %d), want (3, 2)", e, o)
	}
	if e, o := l.EndOffsetForEpoch(2); e != 1 || o != 2 {
		t.Fatalf("epoch 2 ends at (%d, %d), want (1, 2)", e, o)
	}
	// Leading again in a later epoch (the same leader, re-elected).
	f.produce(1)
	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 2})
	if e, o := l.EndOffsetForEpoch(3); e != 3 || o != 3 {
		t.Fatalf("epoch 3 ends at (%d, %d), want (3, 3)", e, o)
	}
	if e, o := l.EndOffsetForEpoch(4); e != 4 || o != 3 {
		t.Fatalf("epoch 4 ends at (%d, %d), want (4, 3)", e, o)
	}
}

// TestFollowerTruncatesAgainstSilentLeader: the new leader (epoch 3) has
// written nothing in its term and its log ends in epoch 1; the follower
// has a tail from epoch 2 the leader never had. Without the leader's epoch
// start the leader answered epoch 2 with UNDEFINED and the follower kept
// its tail, then appended the leader's records after it.
func TestFollowerTruncatesAgainstSilentLeader(t *testing.T) {
	leader := newFixture(t, State{Leader: -1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	appendEpoch(t, leader.p.Log(), 1, "a", "b", "c", "d", "e")
	leader.leaderAndISR(State{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 1})

	follower := newFixtureAs(t, 2, &leaderCluster{leader: leader.p}, State{Leader: -1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	appendEpoch(t, follower.p.Log(), 1, "a", "b")
	appendEpoch(t, follower.p.Log(), 2, "divergent-1", "divergent-2")
	runManager(t, follower.m)
	follower.leaderAndISR(State{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 1})

	testutil.Eventually(t, 10*time.Second, func() error {
		want, err := logBytes(leader.p.Log())
		if err != nil {
			return err
		}
		got, err := logBytes(follower.p.Log())
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("follower has %d bytes (LEO %d), leader %d (LEO %d)", len(got), follower.p.Log().LogEndOffset(), len(want), leader.p.Log().LogEndOffset())
		}
		return nil
	})
	if b, _ := logBytes(follower.p.Log()); bytes.Contains(b, []byte("divergent")) {
		t.Fatal("the follower kept its divergent tail")
	}
}

// runManager runs m until the test ends.
func runManager(t *testing.T, m *Manager) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		m.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// TestFollowerTruncatesThroughUnknownEpoch: the leader answers the
// follower's epoch 3 with its epoch 2, which the follower never had; the
// follower cuts to the end of its own last epoch below 2 (epoch 1), asks
// again and then copies the leader's epoch 2 (Kafka's intermediate
// truncation, truncationCompleted=false).
func TestFollowerTruncatesThroughUnknownEpoch(t *testing.T) {
	leader := newFixture(t, State{Leader: -1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	appendEpoch(t, leader.p.Log(), 1, "a", "b")
	appendEpoch(t, leader.p.Log(), 2, "c", "d", "e")
	leader.leaderAndISR(State{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 1})

	follower := newFixtureAs(t, 2, &leaderCluster{leader: leader.p}, State{Leader: -1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	appendEpoch(t, follower.p.Log(), 1, "a", "b")
	appendEpoch(t, follower.p.Log(), 3, "divergent-1", "divergent-2")
	runManager(t, follower.m)
	follower.leaderAndISR(State{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 1})

	testutil.Eventually(t, 10*time.Second, func() error {
		want, err := logBytes(leader.p.Log())
		if err != nil {
			return err
		}
		got, err := logBytes(follower.p.Log())
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("follower has %d bytes (LEO %d), leader %d (LEO %d)", len(got), follower.p.Log().LogEndOffset(), len(want), leader.p.Log().LogEndOffset())
		}
		return nil
	})
	if e := follower.p.Log().LeaderEpochAt(2); e != 2 {
		t.Fatalf("follower's offset 2 is in epoch %d, want the leader's 2", e)
	}
}

// TestFormerLeaderDropsEmptyEpoch: a leader elected in epoch 3 that wrote
// nothing before it follows again (epoch 4) drops the epoch start it
// recorded at its log end, as Kafka's first truncation of a follower does;
// otherwise epoch 3 stays its latest, and the first batch of epoch 2 it
// fetches from the new leader moves epoch 2's start to the log end
// (simulation seed 625: acknowledged records read as epoch 1).
func TestFormerLeaderDropsEmptyEpoch(t *testing.T) {
	f := newFixture(t, State{Leader: -1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	appendEpoch(t, f.p.Log(), 1, "a", "b")
	appendEpoch(t, f.p.Log(), 2, "c")
	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 1})
	l := f.p.Log()
	if got := l.LatestEpoch(); got != 3 {
		t.Fatalf("latest epoch %d as leader, want 3", got)
	}
	f.leaderAndISR(State{Leader: 2, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 2})
	if got := l.LatestEpoch(); got != 2 {
		t.Fatalf("latest epoch %d as a follower after an empty term, want 2", got)
	}
	if e, o := l.EndOffsetForEpoch(2); e != 2 || o != 3 {
		t.Fatalf("epoch 2 ends at (%d, %d), want (2, 3)", e, o)
	}
}
