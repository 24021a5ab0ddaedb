package replica

import (
	"context"
	"errors"
	"testing"
)

// TestWaitForCommitAcrossLeaderChange races acks=all waits with leadership
// changes after which the log's HW moves on under the new leader (as a
// follower's fetch sets it). The HW never reaches the waited offset while
// this broker leads, so every wait must end with ErrNotLeader: a success
// would be a leadership check and an HW read from different terms (the
// records acknowledged may have been truncated). Run it with -race.
func TestWaitForCommitAcrossLeaderChange(t *testing.T) {
	const rounds, waiters = 1000, 16
	f := newFixture(t, State{Leader: 1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	stop := make(chan struct{})
	waked := make(chan struct{})
	go func() {
		// Keep waking waiters so that they re-check as often as they can.
		defer close(waked)
		for {
			select {
			case <-stop:
				return
			default:
			}
			f.p.mu.Lock()
			wake(f.p.watchers)
			f.p.mu.Unlock()
		}
	}()
	defer func() {
		close(stop)
		<-waked
	}()
	epoch := int32(0)
	for i := range rounds {
		info, term, err := f.p.AppendAsLeaderInTerm(mustBatch(t), -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, waiters)
		for range waiters {
			go func() { done <- f.p.WaitForCommit(context.Background(), info.LastOffset+1, term, 0) }()
		}
		// The leadership moves and the HW of the new term passes the
		// record in one step under the partition lock: there is no moment
		// at which this broker leads in term and the HW covers the record.
		epoch++
		f.p.mu.Lock()
		f.p.leader, f.p.leaderEpoch, f.p.followers = 2, epoch, nil
		f.p.log.SetHighWatermark(f.p.log.LogEndOffset())
		f.p.wakeLocked()
		f.p.mu.Unlock()
		for range waiters {
			if err := <-done; !errors.Is(err, ErrNotLeader) {
				t.Fatalf("round %d: wait for a record of term %d ended with %v after the leadership moved", i, term, err)
			}
		}
		epoch++
		f.leaderAndISR(State{Leader: 1, LeaderEpoch: epoch, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: epoch})
	}
}

// TestAppendAcrossLeaderChange races appends as leader with leadership
// moving away: once the partition follows, no append of the old term may
// still land in its log (the fetcher copies the new leader's records from
// there; a stray batch would sit between them). Kafka appends under the
// read side of the lock its role changes take.
func TestAppendAcrossLeaderChange(t *testing.T) {
	const rounds = 200
	f := newFixture(t, State{Leader: 1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	epoch := int32(0)
	for i := range rounds {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if _, err := f.p.AppendAsLeader(mustBatch(t), 1, 0); err != nil {
					return
				}
			}
		}()
		epoch++
		f.leaderAndISR(State{Leader: 2, LeaderEpoch: epoch, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: epoch})
		moved := f.p.Log().LogEndOffset()
		<-done
		if leo := f.p.Log().LogEndOffset(); leo != moved {
			t.Fatalf("round %d: the log grew from %d to %d after the leadership moved", i, moved, leo)
		}
		epoch++
		f.leaderAndISR(State{Leader: 1, LeaderEpoch: epoch, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: epoch})
	}
}
