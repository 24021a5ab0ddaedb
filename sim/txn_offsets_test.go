package sim

import (
	"testing"

	"github.com/brook-mq/brook/group"
)

// runsTxnOffsets: the seed runs transactional offset commits.
func runsTxnOffsets(cfg Config) bool { return cfg.TxnOffsets }

// TestSimFindsStableSkipsTxnOffsets: with require_stable blind to pending
// transactional offsets, a fetch of a group whose transaction wrote its
// offset and is not decided yet answers the last committed offset instead
// of UNSTABLE_OFFSET_COMMIT; the transactional offset seeds see it.
func TestSimFindsStableSkipsTxnOffsets(t *testing.T) {
	err := findsFaultsIn(t, runsTxnOffsets, func(cfg *Config) { cfg.GroupFaults = group.Faults{StableSkipsTxnOffsets: true} })
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find require_stable blind to pending transactional offsets")
	}
	t.Logf("found: %v", err)
}
