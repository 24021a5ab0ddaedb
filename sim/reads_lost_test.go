package sim

import "testing"

// TestSimConsumersReadLostRecords: seed 561 is a consumer seed in which
// power failures took committed records that the consumers had read (and
// a deposed leader went on serving them): its consumers deliver offsets
// that disagree with earlier deliveries, which the checks must forgive as
// lost the way Kafka loses them, and only those. Without the rule it
// fails ("p1 offset 0 delivered as ..., earlier as ..."). (Seeds 115
// and then 31 were this test's until the real transaction coordinator
// and then the real follower fetcher's requests and sessions changed
// what the seeds run; none of seeds 1 to 560 does it now.)
func TestSimConsumersReadLostRecords(t *testing.T) {
	r := runSeed(simBase(t), 561, nil, 60)
	if r.err != nil {
		t.Fatalf("seed 561: %v\nlast events:\n%s", r.err, r.trace)
	}
	if r.stats.ReadsLost == 0 || r.stats.Lost == 0 {
		t.Fatalf("seed 561 lost nothing its consumers read (lost %d acknowledged, %d reads): the test no longer shows what it is for", r.stats.Lost, r.stats.ReadsLost)
	}
	t.Logf("seed 561: %d acknowledged records lost by power failures, %d deliveries of lost records forgiven", r.stats.Lost, r.stats.ReadsLost)
}
