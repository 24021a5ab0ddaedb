package sim

import "testing"

// TestSimBrokerEpochsInISRChanges: in seed 897, the first of TestSim's
// seeds to fail with the fault (findsFault takes 96 s to reach it, so
// the test runs it alone), leader 3 proposes adding broker 2 to the ISR
// from the fetches of broker 2's incarnation before its power failure,
// and resends the change while no controller answers; broker 2 restarts
// with its logs emptied and becomes the controller. With KIP-903's
// broker epochs the change names broker 2's earlier incarnation, the
// controller refuses it (INELIGIBLE_REPLICA) and the leader proposes
// again only from the new incarnation's fetches. Without them
// (replica.Faults.NoBrokerEpochs, Kafka's ZooKeeper mode) the controller
// applies it, and the ISR check finds broker 2 in the ISR without the
// leader's records (KAFKA-14139).
func TestSimBrokerEpochsInISRChanges(t *testing.T) {
	base := simBase(t)
	r := runSeed(base, 897, nil, 60)
	if r.err != nil {
		t.Fatalf("seed 897: %v\nlast events:\n%s", r.err, r.trace)
	}
	if r.stats.IneligibleISRChanges == 0 {
		t.Fatal("seed 897 had no ISR change refused INELIGIBLE_REPLICA: the test no longer shows what it is for")
	}
	r = runSeed(base, 897, func(cfg *Config) { cfg.Faults.NoBrokerEpochs = true }, 60)
	if r.err == nil {
		t.Fatal("seed 897 passed with the broker epochs left out: the test no longer shows what it is for")
	}
	t.Logf("without broker epochs: %v", r.err)
}
