package sim

import "testing"

// TestSimFindsRetryWithNewSequence: a producer that gives a batch it
// sends again a new sequence (Config.IdemRetryNewSequence) defeats the
// leader's duplicate check: a batch committed whose answer was lost is
// appended a second time, and the final check finds the record twice
// below a replica's HW (or acknowledged at another offset than the one
// the log holds it at).
func TestSimFindsRetryWithNewSequence(t *testing.T) {
	err := findsFaults(t, func(cfg *Config) { cfg.IdemRetryNewSequence = true })
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find retries with a new sequence")
	}
	t.Logf("found: %v", err)
}
