package replica

import (
	"math/rand/v2"
	"testing"
)

func TestHighWatermark(t *testing.T) {
	tests := []struct {
		name      string
		current   int64
		leaderLEO int64
		isr       []int32
		followers map[int32]int64
		want      int64
	}{
		{"alone in ISR", 0, 10, []int32{1}, nil, 10},
		{"follower behind", 0, 10, []int32{1, 2}, map[int32]int64{2: 4}, 4},
		{"follower unknown keeps HW", 3, 10, []int32{1, 2}, nil, 3},
		{"out-of-ISR follower ignored", 0, 10, []int32{1}, map[int32]int64{2: 1}, 10},
		{"never backwards", 8, 10, []int32{1, 2}, map[int32]int64{2: 5}, 8},
	}
	for _, tt := range tests {
		if got := highWatermark(tt.current, tt.leaderLEO, 1, tt.isr, tt.followers); got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestHighWatermarkModel compares with the rule stated plainly: the largest
// offset that every ISR member (the leader included) has reached, floored
// at the current HW.
func TestHighWatermarkModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		current := r.Int64N(50)
		leaderLEO := current + r.Int64N(50)
		isr := []int32{1}
		followers := map[int32]int64{}
		for id := int32(2); id <= 4; id++ {
			if r.IntN(2) == 0 {
				isr = append(isr, id)
			}
			if r.IntN(3) > 0 {
				followers[id] = r.Int64N(leaderLEO + 1)
			}
		}
		want := current
		for o := leaderLEO; o > current; o-- {
			all := true
			for _, id := range isr[1:] {
				leo, ok := followers[id]
				if !ok || leo < o {
					all = false
				}
			}
			if all {
				want = o
				break
			}
		}
		if got := highWatermark(current, leaderLEO, 1, isr, followers); got != want {
			t.Fatalf("current %d leo %d isr %v followers %v: got %d want %d", current, leaderLEO, isr, followers, got, want)
		}
	}
}

// TestIdleFollowerFetchSkipsHW: a follower fetching again at the offset it
// fetched at last cannot move the high watermark, and its fetch skips the
// computation (one map per fetch of every idle partition a follower
// follows, most of a follower's incremental fetch of quiet partitions), as
// Kafka's updateFollowerFetchState does; a fetch at a new offset still
// advances it.
func TestIdleFollowerFetchSkipsHW(t *testing.T) {
	f := newFixture(t, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	leo := f.produce(3)
	f.fetch(2, 1)
	if hw := f.p.HighWatermark(); hw != 1 {
		t.Fatalf("HW %d after follower 2 fetched at 1, want 1", hw)
	}
	if allocs := testing.AllocsPerRun(100, func() { f.fetch(2, 1) }); allocs != 0 {
		t.Errorf("a fetch at the same offset allocates %v times, want 0 (the HW computed again)", allocs)
	}
	f.fetch(2, leo)
	if hw := f.p.HighWatermark(); hw != leo {
		t.Fatalf("HW %d after follower 2 fetched at %d, want %d", hw, leo, leo)
	}
}

// TestRecordQuietFollowerFetch: a follower's fetch of a partition its
// session holds quiet (stamped with a FetchState) is recorded only while
// the partition's state is the stamp's, and is reported quiet only if the
// state is still the stamp's once recorded: a fetch that moves the high
// watermark is not, so that the broker reads the partition and tells the
// follower the new HW.
func TestRecordQuietFollowerFetch(t *testing.T) {
	f := newFixture(t, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}})
	leo := f.produce(3)
	f.fetch(2, 1)
	f.fetch(3, 1)
	stamp := f.p.FetchState()
	if stamp.HighWatermark != 1 {
		t.Fatalf("HW %d after both followers fetched at 1, want 1", stamp.HighWatermark)
	}
	record := func(state FetchState, replica int32, offset int64) bool {
		t.Helper()
		quiet, err := f.p.RecordQuietFollowerFetch(state, replica, -1, offset, 0)
		if err != nil {
			t.Fatalf("follower %d fetch at %d: %v", replica, offset, err)
		}
		return quiet
	}
	if !record(stamp, 2, 1) {
		t.Fatal("a fetch at the same offset of an unchanged partition is not quiet")
	}
	// Follower 2's fetch at the log end does not move the HW (3 is at 1).
	if !record(stamp, 2, leo) || f.p.HighWatermark() != 1 {
		t.Fatalf("a fetch that left the HW at %d is not quiet, want quiet at 1", f.p.HighWatermark())
	}
	// A stamp the partition no longer matches: nothing is recorded (the
	// broker reads the partition, which records the fetch).
	stale := stamp
	stale.LogEnd--
	if record(stale, 3, leo) || f.p.HighWatermark() != 1 {
		t.Fatalf("a fetch with a stale stamp: quiet, or HW %d, want 1 (not recorded)", f.p.HighWatermark())
	}
	// Follower 3 at the log end moves the HW: not quiet any more.
	if record(stamp, 3, leo) {
		t.Fatal("a fetch that moved the HW is quiet")
	}
	if hw := f.p.HighWatermark(); hw != leo {
		t.Fatalf("HW %d after both followers fetched at %d, want %d", hw, leo, leo)
	}
	if record(stamp, 3, leo) {
		t.Fatal("a fetch of a partition whose HW moved since its stamp is quiet")
	}
	if !record(f.p.FetchState(), 3, leo) {
		t.Fatal("a fetch at the same offset after the HW moved, with the new stamp, is not quiet")
	}
	now := f.p.FetchState()
	if allocs := testing.AllocsPerRun(100, func() { record(now, 3, leo) }); allocs != 0 {
		t.Errorf("a quiet fetch allocates %v times, want 0", allocs)
	}
}
