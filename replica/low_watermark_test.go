package replica

import (
	"context"
	"errors"
	"testing"
	"time"
)

func allAlive(int32) bool { return true }

// TestLowWatermark follows Kafka's Partition.lowWatermarkIfLeader: the
// least log start offset over the leader and every other assigned replica
// on a live broker, from the log start offsets followers report in their
// fetches; a live follower not heard from yet counts as -1.
func TestLowWatermark(t *testing.T) {
	f := newFixture(t, leaderState())
	leo := f.produce(10)
	f.fetchFrom(2, leo, 0)
	f.fetchFrom(3, leo, 0)
	if _, err := f.p.Log().DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	if low, err := f.p.LowWatermark(allAlive); err != nil || low != 0 {
		t.Fatalf("low watermark %d, %v; want 0 before the followers follow", low, err)
	}
	f.fetchFrom(2, leo, 6)
	if low, _ := f.p.LowWatermark(allAlive); low != 0 {
		t.Fatalf("low watermark %d with follower 3 still at 0", low)
	}
	f.fetchFrom(3, leo, 4)
	if low, _ := f.p.LowWatermark(allAlive); low != 4 {
		t.Fatalf("low watermark %d, want follower 3's 4", low)
	}
	// A replica on a dead broker does not hold it back.
	if low, _ := f.p.LowWatermark(func(id int32) bool { return id != 3 }); low != 6 {
		t.Fatalf("low watermark %d without broker 3, want 6", low)
	}

	// A replica reassigned away does not either.
	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 8})
	if low, _ := f.p.LowWatermark(allAlive); low != 6 {
		t.Fatalf("low watermark %d after 3 was reassigned away, want 6", low)
	}

	// A new leadership knows nothing of its followers yet.
	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 6, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, ZKVersion: 9})
	f.leaderAndISR(State{Leader: 2, LeaderEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, ZKVersion: 9})
	if _, err := f.p.LowWatermark(allAlive); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("low watermark as follower: %v", err)
	}
	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 8, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, ZKVersion: 10})
	if low, _ := f.p.LowWatermark(allAlive); low != -1 {
		t.Fatalf("low watermark %d before any follower fetched, want -1", low)
	}
}

// TestWaitForLowWatermark: DeleteRecords' wait ends when every live
// replica reports the new log start offset, with ErrNotLeader when the
// leadership moves, or with its context.
func TestWaitForLowWatermark(t *testing.T) {
	f := newFixture(t, leaderState())
	leo := f.produce(10)
	f.fetchFrom(2, leo, 0)
	f.fetchFrom(3, leo, 0)
	if _, err := f.p.Log().DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var low int64
	go func() {
		var err error
		low, err = f.p.WaitForLowWatermark(context.Background(), 6, allAlive)
		done <- err
	}()
	f.fetchFrom(2, leo, 6)
	select {
	case err := <-done:
		t.Fatalf("wait ended (%v) with follower 3 still at 0", err)
	default:
	}
	f.fetchFrom(3, leo, 6)
	if err := <-done; err != nil || low != 6 {
		t.Fatalf("wait: low watermark %d, %v", low, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := f.p.WaitForLowWatermark(ctx, 8, allAlive); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait past its deadline: %v", err)
	}

	go func() {
		_, err := f.p.WaitForLowWatermark(context.Background(), 8, allAlive)
		done <- err
	}()
	f.leaderAndISR(State{Leader: 2, LeaderEpoch: 6, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, ZKVersion: 8})
	if err := <-done; !errors.Is(err, ErrNotLeader) {
		t.Fatalf("wait across a leader change: %v", err)
	}
}

// TestFollowerReportsLogStartOffset: a follower moves its log start offset
// to the leader's from the fetch answer and reports it in its next fetch,
// which completes the leader's DeleteRecords wait.
func TestFollowerReportsLogStartOffset(t *testing.T) {
	state := State{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 1}
	leader := newFixture(t, state)
	leo := leader.produce(10)
	follower := newFixtureAs(t, 2, &leaderCluster{leader: leader.p}, State{Leader: -1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	runManager(t, follower.m)
	follower.leaderAndISR(state)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.p.WaitForHighWatermark(ctx, leo); err != nil {
		t.Fatalf("HW: %v", err)
	}
	if _, err := leader.p.Log().DeleteRecordsBefore(7); err != nil {
		t.Fatal(err)
	}
	low, err := leader.p.WaitForLowWatermark(ctx, 7, allAlive)
	if err != nil || low != 7 {
		t.Fatalf("low watermark %d, %v", low, err)
	}
	if got := follower.p.Log().LogStartOffset(); got != 7 {
		t.Fatalf("follower starts at %d, want 7", got)
	}
}
