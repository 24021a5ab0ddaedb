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
