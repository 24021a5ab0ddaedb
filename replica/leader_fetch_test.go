package replica

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestReadForFollower: the leader's answer to one partition of a follower's
// fetch. A fetch offset past the log end is out of range and not recorded
// (else the follower's claimed offset would advance the HW); one within
// it is recorded, answered with the HW after it, and reads up to the log
// end; the leader's replication throttle holds back the records of a
// replica out of the ISR.
func TestReadForFollower(t *testing.T) {
	f := newFixture(t, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	leo := f.produce(3)
	read := func(offset int64) FollowerRead {
		return f.m.ReadForFollower(f.p, FollowerFetch{ReplicaID: 2, CurrentLeaderEpoch: -1, FetchOffset: offset, LastFetchedEpoch: -1, MaxBytes: 1 << 20, First: true})
	}
	if r := read(leo + 2); r.ErrorCode != kerr.OffsetOutOfRange.Code || f.p.HighWatermark() != 0 {
		t.Fatalf("fetch past the log end: error %d, HW %d; want OFFSET_OUT_OF_RANGE and the fetch not recorded (HW 0)", r.ErrorCode, f.p.HighWatermark())
	}
	r := read(1)
	if r.ErrorCode != 0 || r.HighWatermark != 1 || r.State.HighWatermark != 0 || r.AtBound || r.Records.Size == 0 || r.Records.LastOffset != leo-1 {
		t.Fatalf("fetch at 1: %+v; want no error, HW 1 after the fetch (0 before), the records up to the log end", r)
	}
	if r := read(leo); r.ErrorCode != 0 || r.HighWatermark != leo || !r.AtBound || r.Records.Size != 0 {
		t.Fatalf("fetch at the log end: %+v; want HW %d, at its bound, nothing read", r, leo)
	}
	if r := f.m.ReadForFollower(f.p, FollowerFetch{ReplicaID: 9, CurrentLeaderEpoch: -1, FetchOffset: 0, LastFetchedEpoch: -1, MaxBytes: 1 << 20}); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch of an unknown replica: error %d, want NOT_LEADER_OR_FOLLOWER", r.ErrorCode)
	}

	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1}, ZKVersion: 1})
	f.m.cfg.ThrottledReplicas = func(string) (leader, follower []string) { return []string{"0:1"}, nil }
	f.m.UpdateConfig(testTopic)
	q := f.m.LeaderQuota()
	q.SetRate(1024)
	q.Record(1 << 20)
	if r := read(1); r.ErrorCode != 0 || !r.Throttled || r.Records.Size != 0 {
		t.Fatalf("throttled out-of-sync replica over the quota: %+v; want its fetch answered without records", r)
	}
}

// A follower's fetch sent at a leader epoch since replaced is fenced every
// time it is read, as Kafka's Partition.fetchRecords checks the epoch on
// each read of a delayed fetch too, and is not recorded: a fetch parked
// before the controller took the follower out of the ISR (its log dir
// failed) would otherwise put it straight back when it completes.
func TestReadForFollowerFencesOldEpoch(t *testing.T) {
	f := newFixture(t, State{Leader: 1, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	leo := f.produce(2)
	f.fetch(2, leo)
	// The controller takes 2 out (a new leader epoch) while 2's fetch at
	// epoch 4, caught up, is parked.
	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 5, Replicas: []int32{1, 2}, ISR: []int32{1}, ZKVersion: 1})
	stale := FollowerFetch{ReplicaID: 2, CurrentLeaderEpoch: 4, FetchOffset: leo, LastFetchedEpoch: -1, MaxBytes: 1 << 20, First: true}
	if r := f.m.ReadForFollower(f.p, stale); r.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("fetch at the old epoch: error %d, want FENCED_LEADER_EPOCH", r.ErrorCode)
	}
	if f.p.proposedISR != nil {
		t.Fatalf("the fenced fetch proposed the ISR %v", f.p.proposedISR)
	}
	if r := f.m.ReadForFollower(f.p, FollowerFetch{ReplicaID: 2, CurrentLeaderEpoch: 6, FetchOffset: leo, LastFetchedEpoch: -1, MaxBytes: 1 << 20}); r.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("fetch at a newer epoch: error %d, want UNKNOWN_LEADER_EPOCH", r.ErrorCode)
	}
	// At the current epoch the same fetch counts.
	stale.CurrentLeaderEpoch = 5
	if r := f.m.ReadForFollower(f.p, stale); r.ErrorCode != 0 || f.p.proposedISR == nil {
		t.Fatalf("fetch at the current epoch: error %d, proposed %v; want the follower proposed back", r.ErrorCode, f.p.proposedISR)
	}
}
