package broker

import (
	"testing"
	"time"
)

// TestFetchWaitCapped checks that a fetch waits at most maxFetchWait,
// whatever max_wait_ms asks.
func TestFetchWaitCapped(t *testing.T) {
	for _, tc := range []struct {
		ms   int32
		want time.Duration
	}{
		{500, 500 * time.Millisecond},
		{int32(maxFetchWait / time.Millisecond), maxFetchWait},
		{600_000, maxFetchWait},
		{1<<31 - 1, maxFetchWait},
	} {
		if got := fetchWait(tc.ms); got != tc.want {
			t.Errorf("fetchWait(%d) = %v, want %v", tc.ms, got, tc.want)
		}
	}
}
