package sim

import (
	"testing"

	"github.com/brook-mq/brook/group"
)

// TestSimEmptyEpochOfFormerLeader: in seed 625 (a seed with transactional
// offset commits) broker 2 was elected leader of p1 in epoch 3 and
// recorded its epoch's start at its log end, then followed in epoch 4
// before writing anything; the first batch of epoch 2 it fetched moved
// epoch 2's start to its log end, and as the final leader it read
// acknowledged records of epoch 2 as epoch 1 ("acknowledged
// value-00000349; at offset 129 (epoch 2) lost: leader 2 has it in epoch
// 1"). The former leader now drops the empty epoch when it follows
// (replica.Partition.become, log.TruncateTo).
func TestSimEmptyEpochOfFormerLeader(t *testing.T) {
	r := runSeed(simBase(t), 625, nil, 60)
	if r.err != nil {
		t.Fatalf("seed 625: %v\nlast events:\n%s", r.err, r.trace)
	}
	if r.stats.TxnOffsetsVisible == 0 {
		t.Fatal("seed 625 made no transactional offset commit visible: it no longer runs what it was found with")
	}
}

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
