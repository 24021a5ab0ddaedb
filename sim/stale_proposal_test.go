package sim

import "testing"

// TestSimStaleProposalApplied: in seed 897 a leader's ISR expansion,
// proposed while broker 2's earlier incarnation was caught up and resent
// while no controller answered, is applied after broker 2 restarted with
// logs a power failure emptied (Kafka's ZooKeeper mode does the same
// before KIP-903). Without proposedStale the ISR check fails ("ISR [3 2]
// in ZooKeeper (version 5) has broker 2 (LEO 0, ...)"), and with it but
// with only the last power failure's logs counted as received, the acks
// check does ("acknowledged p1 offset 51 by leader 3 with 1 replicas
// holding it").
func TestSimStaleProposalApplied(t *testing.T) {
	r := runSeed(simBase(t), 897, nil, 60)
	if r.err != nil {
		t.Fatalf("seed 897: %v\nlast events:\n%s", r.err, r.trace)
	}
	if r.stats.StaleProposals == 0 {
		t.Fatal("seed 897 applied no stale ISR proposal: the test no longer shows what it is for")
	}
}
