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
