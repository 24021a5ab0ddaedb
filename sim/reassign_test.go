package sim

import (
	"testing"

	"github.com/brook-mq/brook/controller"
)

// runsReassignments: the seed runs the reassignment workload.
func runsReassignments(cfg Config) bool { return cfg.Reassignments }

// TestSimFindsReassignmentBeforeInSync reverts the completion rule of
// reassignments behind controller.Faults: a reassignment completes at
// once, without waiting for its target replicas to join the ISR, so the
// removed replicas are stopped and deleted while the added ones are still
// empty; the seeds TestSim runs see a completion written with a target
// replica outside the ISR.
func TestSimFindsReassignmentBeforeInSync(t *testing.T) {
	err := findsFaultsIn(t, runsReassignments, func(cfg *Config) {
		cfg.ControllerFaults = controller.Faults{ReassignBeforeInSync: true}
	})
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find reassignments completed before their replicas were in sync")
	}
	t.Logf("found: %v", err)
}

// TestSimFindsRemovedReplicaKept: brokers that keep the partitions a
// StopReplica asks them to delete (Config.StopReplicaKeepsLogs, a bug for
// tests) still host a replica a reassignment removed, with the same
// broker registration and controller since: the reassignment seeds see
// it after the quiet phase (reassign_change.go).
func TestSimFindsRemovedReplicaKept(t *testing.T) {
	err := findsFaultsIn(t, func(cfg Config) bool { return cfg.Reassignments && !cfg.TopicChurn }, func(cfg *Config) {
		cfg.StopReplicaKeepsLogs = true
	})
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find removed replicas kept")
	}
	t.Logf("found: %v", err)
}

// TestSimDuplicatedCancel: in seed 1620 the admin's cancel of a
// reassignment is answered NO_REASSIGNMENT_IN_PROGRESS although it (or a
// copy of it the network duplicated) cancelled the reassignment. The
// admin cannot tell that from a reassignment that completed, so either
// replica set may stand after the quiet phase; without that rule the seed
// fails ("p2: replicas [3 1] after the quiet phase, the admin asked for
// [[3 2]]"). (Seed 2511 was this test's until the idempotent producer
// changed what the seeds draw.) Seed 2688 with the simple consumers left
// out, issue 19's reassignment "not finished after the quiet phase", is
// the same course: the cancel back to [2 3] applied at 12.384s, its copy
// answered first; without the rule it fails ("p1: replicas [2 3] after
// the quiet phase, the admin asked for [[2 3 1]]").
func TestSimDuplicatedCancel(t *testing.T) {
	for _, tc := range []struct {
		seed int64
		set  func(*Config)
	}{
		{1620, nil},
		{2688, func(cfg *Config) { cfg.NoSimpleConsumers = true }},
	} {
		r := runSeed(simBase(t), tc.seed, tc.set, 60)
		if r.err != nil {
			t.Fatalf("seed %d: %v\nlast events:\n%s", tc.seed, r.err, r.trace)
		}
		if r.stats.ReassignCancelsMoot == 0 {
			t.Fatalf("seed %d answered no cancel NO_REASSIGNMENT_IN_PROGRESS: the test no longer shows what it is for", tc.seed)
		}
	}
}
