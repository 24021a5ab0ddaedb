package replica

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// KIP-903: followers' fetches carry their broker epochs, and a leader
// names each member of an ISR change with the epoch it knew it by.

// epochFixture leads t-0 as broker 1 at broker epoch 201, ISR {1,2} of
// replicas {1,2,3}, with two records.
func epochFixture(t *testing.T, set func(*Config)) *fixture {
	t.Helper()
	return newFixtureWith(t, 1, &fakeCluster{}, State{Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, ZKVersion: 7}, func(c *Config) {
		c.BrokerEpoch = func() int64 { return 201 }
		if set != nil {
			set(c)
		}
	})
}

// fetchAt is follower replica's fetch at offset in broker epoch epoch.
func (f *fixture) fetchAt(replica int32, epoch, offset int64) error {
	return f.p.UpdateFollowerFetch(replica, epoch, offset, 0)
}

// memberEpochs are the (broker, epoch) pairs of the n-th AlterPartition
// request's only change.
func (f *fixture) memberEpochs(n int) [][2]int64 {
	f.t.Helper()
	f.cluster.mu.Lock()
	defer f.cluster.mu.Unlock()
	if len(f.cluster.alters) <= n {
		f.t.Fatalf("%d AlterPartition requests, want request %d", len(f.cluster.alters), n)
	}
	var out [][2]int64
	for _, e := range f.cluster.alters[n].Topics[0].Partitions[0].NewEpochISR {
		out = append(out, [2]int64{int64(e.BrokerID), e.BrokerEpoch})
	}
	return out
}

// TestISRChangeNamesBrokerEpochs: the leader records each follower's
// broker epoch from its fetches and names the members of an ISR change
// with them, itself with its own; a follower whose fetch carried none
// (below Fetch v15) is named -1, which the controller does not check.
func TestISRChangeNamesBrokerEpochs(t *testing.T) {
	f := epochFixture(t, nil)
	leo := f.produce(2)
	if err := f.fetchAt(2, -1, leo); err != nil {
		t.Fatal(err)
	}
	if err := f.fetchAt(3, 203, leo); err != nil {
		t.Fatal(err)
	}
	if !f.m.sendISRChanges(context.Background()) {
		t.Fatal("the expansion failed")
	}
	want := [][2]int64{{1, 201}, {2, -1}, {3, 203}}
	if got := f.memberEpochs(0); !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v", got, want)
	}
	if e := f.cluster.alters[0].BrokerEpoch; e != 201 {
		t.Fatalf("request broker epoch %d, want 201", e)
	}
}

// TestISRChangeKeepsItsMembersEpochs is KAFKA-14139: the leader proposes
// adding follower 3 from its fetches at broker epoch 203, and the request
// goes unanswered; broker 3 restarts with an empty log and fetches at
// epoch 303. The change is resent naming 3 at 203, as proposed, so the
// controller, which knows 3 at 303, refuses it (INELIGIBLE_REPLICA); the
// leader goes back to the committed ISR and proposes 3 again only once
// the new incarnation has caught up, at 303.
func TestISRChangeKeepsItsMembersEpochs(t *testing.T) {
	f := epochFixture(t, nil)
	live := map[int32]int64{1: 201, 2: 202, 3: 303}
	leo := f.produce(2)
	for _, id := range []int32{2, 3} {
		if err := f.fetchAt(id, 200+int64(id), leo); err != nil {
			t.Fatal(err)
		}
	}
	f.cluster.answer = func(*kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
		return nil, context.DeadlineExceeded
	}
	f.m.sendISRChanges(context.Background())
	if err := f.fetchAt(3, 303, 0); err != nil {
		t.Fatal(err)
	}
	// The controller: a member named with an epoch other than its live
	// registration's is ineligible (controller/alter.go).
	f.cluster.answer = func(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
		for _, e := range req.Topics[0].Partitions[0].NewEpochISR {
			if e.BrokerEpoch > 0 && e.BrokerEpoch != live[e.BrokerID] {
				return refuseAll(kerr.IneligibleReplica.Code)(req)
			}
		}
		return acceptAll(req), nil
	}
	f.m.sendISRChanges(context.Background())
	if got, want := f.memberEpochs(1), [][2]int64{{1, 201}, {2, 202}, {3, 203}}; !slices.Equal(got, want) {
		t.Fatalf("resent members %v, want %v as proposed", got, want)
	}
	if s := f.p.State(); !slices.Equal(s.ISR, []int32{1, 2}) {
		t.Fatalf("ISR %v: broker 3's new incarnation, with an empty log, joined", s.ISR)
	}
	// Back on the committed ISR: the HW moves with 2 alone, and 3 at
	// offset 0 is not proposed.
	leo = f.produce(1)
	if err := f.fetchAt(2, 202, leo); err != nil {
		t.Fatal(err)
	}
	if hw := f.p.HighWatermark(); hw != leo {
		t.Fatalf("HW %d, want %d on the committed ISR", hw, leo)
	}
	f.m.sendISRChanges(context.Background())
	if n := f.cluster.requests(); n != 2 {
		t.Fatalf("%d AlterPartition requests, want no change proposed for a follower at offset 0", n)
	}
	if err := f.fetchAt(3, 303, leo); err != nil {
		t.Fatal(err)
	}
	f.m.sendISRChanges(context.Background())
	if got, want := f.memberEpochs(2), [][2]int64{{1, 201}, {2, 202}, {3, 303}}; !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v", got, want)
	}
	if s := f.p.State(); !slices.Equal(s.ISR, []int32{1, 2, 3}) {
		t.Fatalf("ISR %v after the new incarnation caught up", s.ISR)
	}
}

// TestFetchOfNewIncarnation: a fetch at a higher broker epoch is a new
// incarnation of the follower, and what the leader knew from the earlier
// one's fetches is forgotten: an ISR member caught up a moment ago that
// comes back behind the leader is dropped at the next check instead of
// replica.lag.time.max.ms later. A fetch at a lower epoch than one seen
// is the earlier incarnation's, refused (NOT_LEADER_OR_FOLLOWER) and not
// recorded.
func TestFetchOfNewIncarnation(t *testing.T) {
	f := epochFixture(t, nil)
	leo := f.produce(2)
	if err := f.fetchAt(2, 202, leo); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(lagMax / 2)
	f.produce(1)
	if err := f.fetchAt(2, 302, 1); err != nil {
		t.Fatal(err)
	}
	f.m.CheckISRs()
	if !f.m.sendISRChanges(context.Background()) || f.cluster.requests() != 1 {
		t.Fatalf("%d AlterPartition requests, want the shrink of 2's new incarnation", f.cluster.requests())
	}
	if s := f.p.State(); !slices.Equal(s.ISR, []int32{1}) {
		t.Fatalf("ISR %v, want [1]", s.ISR)
	}

	err := f.fetchAt(2, 202, leo+1)
	if !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("fetch of the earlier incarnation: %v, want %v", err, ErrStaleBrokerEpoch)
	}
	r := f.m.ReadForFollower(f.p, FollowerFetch{ReplicaID: 2, BrokerEpoch: 202, CurrentLeaderEpoch: 5, FetchOffset: leo + 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20})
	if r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("read for the earlier incarnation: error %d, want NOT_LEADER_OR_FOLLOWER", r.ErrorCode)
	}
	f.p.mu.Lock()
	got := *f.p.followers[2]
	f.p.mu.Unlock()
	if got.leo != 1 || got.brokerEpoch != 302 {
		t.Fatalf("follower 2 at %d, epoch %d: the earlier incarnation's fetch was recorded", got.leo, got.brokerEpoch)
	}
}

// TestFetchRequestCarriesBrokerEpoch: a follower's Fetch (v15+
// replica_state) carries its broker epoch, -1 before it registered (0)
// or without one, and -1 with the KIP-903 fault.
func TestFetchRequestCarriesBrokerEpoch(t *testing.T) {
	for _, tt := range []struct {
		name  string
		epoch func() int64
		fault bool
		want  int64
	}{
		{"registered", func() int64 { return 7 }, false, 7},
		{"not registered yet", func() int64 { return 0 }, false, -1},
		{"no epoch", nil, false, -1},
		{"NoBrokerEpochs", func() int64 { return 7 }, true, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixtureWith(t, 2, &fakeCluster{}, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, func(c *Config) {
				c.BrokerEpoch, c.Faults.NoBrokerEpochs = tt.epoch, tt.fault
			})
			req, _, _ := f.m.NewLeaderFetcher(1, nil).FetchRequest([]FetchPartition{{P: f.p, State: &FetchPartitionState{LeaderEpoch: 1}}})
			if req == nil {
				t.Fatal("no fetch built")
			}
			if req.ReplicaState.ID != 2 || req.ReplicaState.Epoch != tt.want {
				t.Fatalf("replica_state %+v, want id 2 epoch %d", req.ReplicaState, tt.want)
			}
		})
	}
}

// TestLeaderAndISRForgetsOutOfISRBrokerEpochs: a follower whose broker
// epoch went down (its ZooKeeper ensemble rebuilt) is refused, with one
// warning however often it fetches; once a LeaderAndISR keeping this
// leader leaves it out of the ISR, the leader forgets its recorded epoch
// and takes its fetches again, while an ISR member's epoch is kept.
func TestLeaderAndISRForgetsOutOfISRBrokerEpochs(t *testing.T) {
	var logs testutil.SyncBuffer
	f := epochFixture(t, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	leo := f.produce(2)
	for _, id := range []int32{2, 3} {
		if err := f.fetchAt(id, 200+int64(id), leo); err != nil {
			t.Fatal(err)
		}
	}
	read := func(replica int32, epoch int64) int16 {
		return f.m.ReadForFollower(f.p, FollowerFetch{ReplicaID: replica, BrokerEpoch: epoch, CurrentLeaderEpoch: 5, FetchOffset: 0, LastFetchedEpoch: -1, MaxBytes: 1 << 20}).ErrorCode
	}
	for range 3 {
		if code := read(3, 103); code != kerr.NotLeaderForPartition.Code {
			t.Fatalf("fetch at a lower broker epoch: error %d, want NOT_LEADER_OR_FOLLOWER", code)
		}
	}
	if n := strings.Count(logs.String(), "earlier broker epoch"); n != 1 {
		t.Fatalf("%d warnings for three refused fetches, want 1:\n%s", n, logs.String())
	}
	if s := logs.String(); !strings.Contains(s, "broker_epoch=103") || !strings.Contains(s, "recorded_broker_epoch=203") {
		t.Fatalf("warning without both epochs:\n%s", s)
	}

	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, ZKVersion: 8})
	if code := read(3, 103); code != 0 {
		t.Fatalf("fetch at the lower broker epoch after the LeaderAndISR: error %d", code)
	}
	if err := f.fetchAt(2, 102, leo); !errors.Is(err, ErrStaleBrokerEpoch) {
		t.Fatalf("ISR member's fetch at a lower broker epoch: %v, want %v", err, ErrStaleBrokerEpoch)
	}
	f.p.mu.Lock()
	got := f.p.followers[3].brokerEpoch
	f.p.mu.Unlock()
	if got != 103 {
		t.Fatalf("follower 3 recorded at broker epoch %d, want 103", got)
	}
}

// TestBrokerEpochZeroIsNone: a fetch at broker epoch 0 (a broker not
// registered yet, Manager.brokerEpoch) carries no epoch, as -1 does: not
// refused below a recorded one, and recorded as -1 so that an ISR change
// names the follower without one.
func TestBrokerEpochZeroIsNone(t *testing.T) {
	f := epochFixture(t, nil)
	leo := f.produce(2)
	// Follower 2 takes the HW to the log end, so that 3 qualifies only
	// with its second fetch.
	for _, fetch := range [][3]int64{{2, -1, leo}, {3, 203, 0}} {
		if err := f.fetchAt(int32(fetch[0]), fetch[1], fetch[2]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.fetchAt(3, 0, leo); err != nil {
		t.Fatalf("fetch at broker epoch 0: %v", err)
	}
	if !f.m.sendISRChanges(context.Background()) {
		t.Fatal("the expansion failed")
	}
	if got, want := f.memberEpochs(0), [][2]int64{{1, 201}, {2, -1}, {3, -1}}; !slices.Equal(got, want) {
		t.Fatalf("members %v, want %v", got, want)
	}
}
