package testutil

import (
	"fmt"
	"testing"
	"time"
)

// pollInterval is the pause between two checks of Eventually and Poll.
const pollInterval = 20 * time.Millisecond

// Eventually calls cond until it returns nil, and fails the test with
// cond's last error if that does not happen within timeout. Tests use it
// instead of sleeping for a condition.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	if err := Poll(timeout, cond); err != nil {
		t.Fatalf("%v", err)
	}
}

// Poll calls cond until it returns nil, and returns cond's last error if
// that does not happen within timeout: Eventually for a caller that
// reports the failure itself, or carries on after it.
func Poll(timeout time.Duration, cond func() error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-deadline.C:
			return fmt.Errorf("condition not met within %v: %w", timeout, err)
		case <-tick.C:
		}
	}
}
