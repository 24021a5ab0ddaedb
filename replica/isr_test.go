package replica

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_000_000, 0)

func TestFollowerCaughtUp(t *testing.T) {
	const lag = 10 * time.Second
	type fetch struct {
		offset, leaderLEO int64
		at                time.Duration
	}
	tests := []struct {
		name      string
		fetches   []fetch
		leaderLEO int64
		now       time.Duration
		want      bool
	}{
		{"at the leader's end", []fetch{{10, 10, 0}}, 10, 100 * time.Second, true},
		{"reached the end recently", []fetch{{10, 10, 0}}, 20, 5 * time.Second, true},
		{"behind for longer than the lag", []fetch{{10, 10, 0}}, 20, 11 * time.Second, false},
		// Reaching the LEO of the previous fetch proves it was caught up
		// at that fetch's time (Kafka's lastFetchLeaderLogEndOffset rule).
		{"caught up with the previous fetch", []fetch{{0, 10, 0}, {10, 20, 8 * time.Second}, {20, 30, 16 * time.Second}}, 30, 17 * time.Second, true},
		{"never caught up", []fetch{{0, 10, 0}, {5, 20, 8 * time.Second}, {9, 30, 16 * time.Second}}, 30, 16 * time.Second, false},
	}
	for _, tt := range tests {
		f := newFollowerState(false, t0)
		for _, fe := range tt.fetches {
			f.recordFetch(fe.offset, fe.leaderLEO, t0.Add(fe.at))
		}
		if got := f.caughtUp(tt.leaderLEO, t0.Add(tt.now), lag); got != tt.want {
			t.Errorf("%s: caughtUp = %v, want %v (state %+v)", tt.name, got, tt.want, *f)
		}
	}
}

func TestShrinkISR(t *testing.T) {
	const lag = 10 * time.Second
	fresh := func(leo int64, caught time.Duration) *followerState {
		return &followerState{leo: leo, lastCaughtUp: t0.Add(caught), lastFetchLeaderLEO: -1}
	}
	tests := []struct {
		name      string
		isr       []int32
		followers map[int32]*followerState
		want      []int32
		shrunk    bool
	}{
		{"all in sync", []int32{1, 2, 3}, map[int32]*followerState{2: fresh(5, 0), 3: fresh(10, -time.Hour)}, []int32{1, 2, 3}, false},
		{"one lagging", []int32{1, 2, 3}, map[int32]*followerState{2: fresh(5, -11*time.Second), 3: fresh(10, 0)}, []int32{1, 3}, true},
		{"unknown follower leaves", []int32{1, 2}, map[int32]*followerState{}, []int32{1}, true},
		{"leader stays alone", []int32{1}, nil, []int32{1}, false},
	}
	for _, tt := range tests {
		got, shrunk := shrinkISR(tt.isr, 1, tt.followers, 10, t0, lag)
		if !slices.Equal(got, tt.want) || shrunk != tt.shrunk {
			t.Errorf("%s: got %v %v, want %v %v", tt.name, got, shrunk, tt.want, tt.shrunk)
		}
	}
}

func TestCanJoinISR(t *testing.T) {
	tests := []struct {
		leo, hw, epochStart int64
		want                bool
	}{
		{10, 10, 5, true},
		{9, 10, 5, false},  // below the HW
		{10, 8, 12, false}, // lacks this leadership's first records
		{-1, 0, 0, false},  // never fetched
	}
	for _, tt := range tests {
		if got := canJoinISR(tt.leo, tt.hw, tt.epochStart); got != tt.want {
			t.Errorf("canJoinISR(%d, %d, %d) = %v", tt.leo, tt.hw, tt.epochStart, got)
		}
	}
}

func TestMaximalISR(t *testing.T) {
	if got := maximalISR([]int32{1, 2, 3}, []int32{1, 3}); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Errorf("pending shrink: %v", got)
	}
	if got := maximalISR([]int32{1, 3}, []int32{1, 3, 2}); !slices.Equal(got, []int32{1, 3, 2}) {
		t.Errorf("pending expand: %v", got)
	}
}

// TestTruncationOffset follows Kafka's truncation cases
// (AbstractFetcherThread.getOffsetTruncationState). The follower's epochs:
// 1 from 0, 3 from 10, 4 from 20; LEO 30, HW 18.
func TestTruncationOffset(t *testing.T) {
	starts := []struct {
		epoch int32
		start int64
	}{{1, 0}, {3, 10}, {4, 20}}
	const leo, hw = 30, 18
	localEnd := func(e int32) (int32, int64) {
		for i := len(starts) - 1; i >= 0; i-- {
			if starts[i].epoch <= e {
				if i == len(starts)-1 {
					return starts[i].epoch, leo
				}
				return starts[i].epoch, starts[i+1].start
			}
		}
		return -1, -1
	}
	tests := []struct {
		name        string
		leaderEpoch int32
		leaderEnd   int64
		want        int64
		done        bool
	}{
		{"same history", 4, 30, 30, true},
		{"leader shorter in our epoch", 4, 25, 25, true},
		{"leader longer in our epoch", 4, 40, 30, true},
		{"leader never had epoch 4, has 3 up to 15", 3, 15, 15, true},
		{"leader's epoch 2 is unknown to us: cut to our epoch 1 end, ask again", 2, 12, 10, false},
		{"leader knows no epoch at or below ours: cut to our HW", -1, -1, 18, true},
		{"leader answers an offset without an epoch (old protocol)", -1, 25, 25, true},
		{"leader without epochs", -1, 12, 12, true},
	}
	for _, tt := range tests {
		got, done := truncationOffset(tt.leaderEpoch, tt.leaderEnd, leo, hw, localEnd)
		if got != tt.want || done != tt.done {
			t.Errorf("%s: got %d %v, want %d %v", tt.name, got, done, tt.want, tt.done)
		}
	}
}
