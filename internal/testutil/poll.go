package testutil

import (
	"testing"
	"time"
)

// pollInterval is the pause between two checks of Eventually.
const pollInterval = 20 * time.Millisecond

// Eventually calls cond until it returns nil, and fails the test with
// cond's last error if that does not happen within timeout. Tests use it
// instead of sleeping for a condition.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("condition not met within %v: %v", timeout, err)
		case <-tick.C:
		}
	}
}
