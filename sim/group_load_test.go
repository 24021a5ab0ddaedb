package sim

import (
	"strings"
	"testing"
)

// TestSimGroupLoadAboveHW: with the simple consumers left out, seeds
// outside TestSim's 1,000 found the group coordinator serving group
// metadata it had loaded above its HW, as Kafka's does. In seed 4358
// broker 1's coordinator appends generation 1 at the leader's SyncGroup
// (offset 0), which broker 2, in the ISR but crashed at 1.8 s, never
// fetches, so broker 1 never answers it; broker 1 shuts down at 3.8 s and
// broker 3 is elected with LEO 1 and HW 0, loads generation 1 as Stable,
// and a member's SyncGroup gets its assignment from memory at 3.96 s
// ("generation 1 synced (leader member0-1)"). Broker 3 crashes at 6 s;
// broker 2, still in the ISR, is elected at 12.07 s with LEO 0 and makes
// a generation 1 of its own: "generation 1 has two leaders: member0-1 and
// member1-5". In seed 18834 broker 1 is elected at 5.24 s with LEO 8 and
// HW 7, syncs generation 2 from offset 7, and broker 2, elected at 5.82 s
// with LEO 7, knows generation 1 only: it refuses member 0's commit with
// generation 2 (ILLEGAL_GENERATION), hands it generation 1 again at its
// rejoin, and acknowledges its commit with that ("commit of 6 by member 0
// with generation 1 acknowledged, but generation 2 had synced"). The
// coordinator now serves its load only once the HW reaches the loaded end
// (group/load.go); each seed passes, and fails with
// group.Faults.ActAboveHighWatermark. (Seeds 5382, 19092 and 29676 failed
// the first way and pass too.)
func TestSimGroupLoadAboveHW(t *testing.T) {
	base := simBase(t)
	for _, seed := range []int64{4358, 18834} {
		r := runSeed(base, seed, func(cfg *Config) { cfg.NoSimpleConsumers = true }, 60)
		if r.err != nil {
			t.Fatalf("seed %d: %v\nlast events:\n%s", seed, r.err, r.trace)
		}
		r = runSeed(base, seed, func(cfg *Config) {
			cfg.NoSimpleConsumers = true
			cfg.GroupFaults.ActAboveHighWatermark = true
		}, 60)
		if r.err == nil || !strings.HasPrefix(r.err.Error(), membersGroup+": ") {
			t.Fatalf("seed %d with the coordinator serving above its HW: %v, want the members' checks to fail: the test no longer shows what it is for", seed, r.err)
		}
		t.Logf("seed %d serving above the HW: %v", seed, r.err)
	}
}
