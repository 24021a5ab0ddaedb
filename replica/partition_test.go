package replica

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

func leaderState() State {
	return State{Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, ZKVersion: 7}
}

// TestHighWatermarkFollowsISR: the HW waits for every ISR member's fetch
// and never counts a replica outside the ISR.
func TestHighWatermarkFollowsISR(t *testing.T) {
	f := newFixture(t, leaderState())
	leo := f.produce(4)
	if hw := f.p.HighWatermark(); hw != 0 {
		t.Fatalf("HW %d before any follower fetched", hw)
	}
	f.fetch(2, leo)
	if hw := f.p.HighWatermark(); hw != 0 {
		t.Fatalf("HW %d with follower 3 unheard", hw)
	}
	f.fetch(3, 2)
	if hw := f.p.HighWatermark(); hw != 2 {
		t.Fatalf("HW %d, want 2 (follower 3's LEO)", hw)
	}
	f.fetch(3, leo)
	if hw := f.p.HighWatermark(); hw != leo {
		t.Fatalf("HW %d, want LEO %d", hw, leo)
	}
	if err := f.p.UpdateFollowerFetch(9, -1, 0, 0); !errors.Is(err, ErrUnknownReplica) {
		t.Fatalf("fetch from a non-replica: %v", err)
	}
}

// TestAcksAllWait covers acks=all's outcomes: committed, timed out,
// NOT_ENOUGH_REPLICAS before and after the append, and leadership lost.
func TestAcksAllWait(t *testing.T) {
	f := newFixture(t, leaderState())
	b := func() []byte {
		bb, err := batch.Build(batch.BuildOptions{BaseTimestamp: 1}, []batch.Record{{Value: []byte("x")}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return bb
	}
	info, term, err := f.p.AppendAsLeaderInTerm(b(), -1, 2)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- f.p.WaitForCommit(context.Background(), info.LastOffset+1, term, 2) }()
	f.fetch(2, info.LastOffset+1)
	f.fetch(3, info.LastOffset+1)
	if err := <-done; err != nil {
		t.Fatalf("committed wait: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	info, term, _ = f.p.AppendAsLeaderInTerm(b(), -1, 2)
	if err := f.p.WaitForCommit(ctx, info.LastOffset+1, term, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait past its context: %v", err)
	}

	// The controller shrinks the ISR to the leader alone: acks=all with
	// min.insync.replicas=2 is refused before appending...
	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 6, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, ZKVersion: 8})
	if _, _, err := f.p.AppendAsLeaderInTerm(b(), -1, 2); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("append with ISR below min: %v", err)
	}
	// ...and the earlier append, now committed by the HW, ends with
	// NOT_ENOUGH_REPLICAS_AFTER_APPEND.
	if err := f.p.WaitForCommit(context.Background(), info.LastOffset+1, term, 2); !errors.Is(err, ErrNotEnoughReplicasAfterAppend) {
		t.Fatalf("wait after the ISR shrank: %v", err)
	}

	info, term, _ = f.p.AppendAsLeaderInTerm(b(), 1, 2)
	go func() { done <- f.p.WaitForCommit(context.Background(), info.LastOffset+2, term, 1) }()
	f.leaderAndISR(State{Leader: 2, LeaderEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, ZKVersion: 9})
	if err := <-done; !errors.Is(err, ErrNotLeader) {
		t.Fatalf("wait across a leader change: %v", err)
	}
	if _, err := f.p.AppendAsLeader(b(), 1, 0); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append as follower: %v", err)
	}
	// Leading again in a new term does not revive the old wait.
	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 8, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, ZKVersion: 10})
	if err := f.p.WaitForCommit(context.Background(), 0, term, 1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("wait from an earlier term: %v", err)
	}
}

// TestISRShrinkAndExpand drives the ISR through the controller: a follower
// that stops fetching is proposed out after replica.lag.time.max.ms, the HW
// holds on the maximal ISR while the change is in flight, and a follower
// that catches up is proposed back in.
func TestISRShrinkAndExpand(t *testing.T) {
	f := newFixture(t, leaderState())
	leo := f.produce(3)
	f.fetch(2, leo)
	f.fetch(3, leo)
	leo = f.produce(2)
	f.fetch(2, leo)
	f.clock.Advance(lagMax + time.Second)
	f.p.maybeShrinkISR()
	if got := f.p.State().ISR; !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("ISR changed before the controller answered: %v", got)
	}
	// In flight: the HW still waits for 3 (maximal ISR), even as 2 fetches.
	rp, ok := f.p.takeProposal()
	if !ok || !slices.Equal(rp.NewISR, []int32{1, 2}) || rp.PartitionEpoch != 7 || rp.LeaderEpoch != 5 {
		t.Fatalf("proposal %+v %v", rp, ok)
	}
	f.fetch(2, leo)
	if hw := f.p.HighWatermark(); hw != 3 {
		t.Fatalf("HW %d moved past the lagging follower before the shrink was accepted", hw)
	}
	// The request fails: the change stays pending and is sent again,
	// through the manager this time, and accepted.
	f.p.alterFailed()
	if !f.m.sendISRChanges(context.Background()) {
		t.Fatal("sendISRChanges failed")
	}
	if s := f.p.State(); !slices.Equal(s.ISR, []int32{1, 2}) || s.ZKVersion != 8 {
		t.Fatalf("after the accepted shrink: %+v", s)
	}
	if hw := f.p.HighWatermark(); hw != leo {
		t.Fatalf("HW %d, want %d once 3 left the ISR", hw, leo)
	}

	// 3 comes back: below the HW it stays out; at the HW it is proposed.
	f.fetch(3, 4)
	if _, ok := f.p.takeProposal(); ok {
		t.Fatal("proposed a follower below the HW")
	}
	// INELIGIBLE_REPLICA: the controller did not apply it, so the next
	// fetch may propose it again.
	f.cluster.answer = refuseAll(kerr.IneligibleReplica.Code)
	f.fetch(3, leo)
	if f.m.sendISRChanges(context.Background()) {
		t.Fatal("a refused change reported success")
	}
	if s := f.p.State(); !slices.Equal(s.ISR, []int32{1, 2}) {
		t.Fatalf("refused expansion applied: %+v", s)
	}
	f.cluster.answer = nil
	f.fetch(3, leo)
	f.m.sendISRChanges(context.Background())
	if s := f.p.State(); !slices.Equal(s.ISR, []int32{1, 2, 3}) || s.ZKVersion != 9 {
		t.Fatalf("after the accepted expansion: %+v", s)
	}
	if n := len(f.cluster.alters); n != 3 {
		t.Fatalf("%d AlterPartition requests, want 3", n)
	}
}

// TestLeaderAndISROrdering: older decisions are refused; a LeaderAndISR
// replaces a proposal in flight, whose late answer is then ignored.
func TestLeaderAndISROrdering(t *testing.T) {
	f := newFixture(t, leaderState())
	stale := f.leaderAndISR(State{Leader: 2, LeaderEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{2}, ZKVersion: 9})
	if code := stale.Topics[0].Partitions[0].ErrorCode; code != kerr.StaleControllerEpoch.Code {
		t.Fatalf("older epoch: code %d", code)
	}
	if !f.p.IsLeader() {
		t.Fatal("stale LeaderAndISR applied")
	}
	f.clock.Advance(lagMax + time.Second)
	f.p.maybeShrinkISR()
	rp, ok := f.p.takeProposal()
	if !ok {
		t.Fatal("no proposal")
	}
	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 6, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 3}, ZKVersion: 8})
	resp := acceptAll(f.alterRequest(rp))
	if err := f.p.applyAlterPartition(resp.Topics[0].Partitions[0]); err != nil {
		t.Fatal(err)
	}
	if s := f.p.State(); !slices.Equal(s.ISR, []int32{1, 3}) || s.LeaderEpoch != 6 {
		t.Fatalf("late AlterPartition answer overrode LeaderAndISR: %+v", s)
	}
}

func (f *fixture) alterRequest(rp kmsg.AlterPartitionRequestTopicPartition) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID = 1
	t := kmsg.NewAlterPartitionRequestTopic()
	t.Topic, t.TopicID = testTopic, testTopicID
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	return req
}

// TestRepeatedLeaderAndISR: the same decision again (a new controller
// resends it) keeps an ISR change in flight.
func TestRepeatedLeaderAndISR(t *testing.T) {
	f := newFixture(t, leaderState())
	f.clock.Advance(lagMax + time.Second)
	f.p.maybeShrinkISR()
	rp, ok := f.p.takeProposal()
	if !ok {
		t.Fatal("no proposal")
	}
	if code := f.leaderAndISR(leaderState()).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("repeat answered %d", code)
	}
	resp := acceptAll(f.alterRequest(rp))
	if err := f.p.applyAlterPartition(resp.Topics[0].Partitions[0]); err != nil {
		t.Fatal(err)
	}
	if s := f.p.State(); !slices.Equal(s.ISR, []int32{1}) || s.ZKVersion != 8 {
		t.Fatalf("accepted shrink lost across a repeated LeaderAndISR: %+v", s)
	}
}

// TestAddRemoveWatch: AddWatch registers a channel as Watch (HW moves
// only) or WatchAppends (every append too) does, and RemoveWatch with the
// same kind unregisters it.
func TestAddRemoveWatch(t *testing.T) {
	f := newFixture(t, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	hw, appends := make(chan struct{}, 1), make(chan struct{}, 1)
	f.p.AddWatch(hw, false)
	f.p.AddWatch(appends, true)
	if n := f.p.Watchers(); n != 2 {
		t.Fatalf("%d watchers, want 2", n)
	}
	// Follower 2 is in the ISR at no known offset: the append leaves the HW.
	leo := f.produce(1)
	select {
	case <-hw:
		t.Fatal("a watch of HW moves woken by an append that left the HW")
	default:
	}
	select {
	case <-appends:
	default:
		t.Fatal("a watch of appends not woken by an append")
	}
	f.fetch(2, leo)
	select {
	case <-hw:
	default:
		t.Fatal("a watch of HW moves not woken by the HW moving")
	}
	// The wrong kind removes nothing.
	f.p.RemoveWatch(hw, true)
	if n := f.p.Watchers(); n != 2 {
		t.Fatalf("%d watchers after removing one of the other kind, want 2", n)
	}
	f.p.RemoveWatch(hw, false)
	f.p.RemoveWatch(appends, true)
	if n := f.p.Watchers(); n != 0 {
		t.Fatalf("%d watchers after removing both, want 0", n)
	}
}
