package sim

import "testing"

// TestSimBrokerEpochsInISRChanges: in seed 4213, the only one of seeds
// 1-5000 to fail with the fault (so not one of TestSim's 1,000, and the
// test runs it alone), broker 2, the controller, loses its log in a power
// failure at 18 s; leader 1 proposes adding broker 2 to the ISR from the
// fetches of broker 2's incarnation before it, and resends the change
// while no controller answers. Broker 2's old session holds its
// registration until 24 s, when broker 3 becomes the controller and broker
// 2 registers again. With KIP-903's broker epochs the change names broker
// 2's earlier incarnation (2@49), the controller refuses it
// (INELIGIBLE_REPLICA) and the leader proposes again only from the new
// incarnation's fetches. Without them (replica.Faults.NoBrokerEpochs,
// Kafka's ZooKeeper mode) the controller applies it, and the ISR check
// finds broker 2 in the ISR without the leader's records (KAFKA-14139).
// (Seed 897 was this test's until the coordinator waited for its HW at
// load, which changed its course.)
func TestSimBrokerEpochsInISRChanges(t *testing.T) {
	base := simBase(t)
	r := runSeed(base, 4213, nil, 60)
	if r.err != nil {
		t.Fatalf("seed 4213: %v\nlast events:\n%s", r.err, r.trace)
	}
	if r.stats.IneligibleISRChanges == 0 {
		t.Fatal("seed 4213 had no ISR change refused INELIGIBLE_REPLICA: the test no longer shows what it is for")
	}
	r = runSeed(base, 4213, func(cfg *Config) { cfg.Faults.NoBrokerEpochs = true }, 60)
	if r.err == nil {
		t.Fatal("seed 4213 passed with the broker epochs left out: the test no longer shows what it is for")
	}
	t.Logf("without broker epochs: %v", r.err)
}
