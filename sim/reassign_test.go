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
