package sim

import (
	"strings"
	"testing"

	"github.com/brook-mq/brook/txn"
)

// TestSimTxnLoadAboveHW keeps the seeds that found the transaction
// coordinator acting on records its load read above the HW (issue 19):
// each fails with txn.Faults.ActAboveHighWatermark, through the check
// named, and passes without it.
//   - 915 (the seed 901 case): broker 3 loads __transaction_state to LEO 4
//     at HW 3 and answers txn-0's AddPartitionsToTxn from offset 3; broker
//     2, elected at LEO 3, aborts the transaction from Empty with no
//     markers, and its batch on p0 hangs.
//   - 2567 (the seed 135 case): broker 3 loads __transaction_state to
//     LEO 6 at HW 5, with a PrepareCommit above its HW, and sends COMMIT
//     markers for txn 0.1; broker 2, elected at LEO 5 without it, fences
//     the producer's EndTxn and aborts 0.1, and p1 ends with the ABORT, so
//     a transaction the coordinator decided to commit is never delivered.
//     (Seed 1983 was this case's until the broker epochs in ISR changes
//     and the duplicate-below-min.insync.replicas rule changed its
//     course; 2567 is the only one of seeds 1-4000 to fail this way.)
//   - 2907 (the seed 237 case): an AddPartitionsToTxn answered from a
//     record above the HW that the next leader lacks leaves txn 1.3
//     undecided, no later transaction of its producer closing it.
func TestSimTxnLoadAboveHW(t *testing.T) {
	base := simBase(t)
	for _, tc := range []struct {
		seed int64
		want string
	}{
		{915, "last stable offset"},
		{2567, "never delivered"},
		{2907, "never decided by the coordinator"},
	} {
		r := runSeed(base, tc.seed, func(cfg *Config) { cfg.TxnFaults = txn.Faults{ActAboveHighWatermark: true} }, 60)
		if r.err == nil || !strings.Contains(r.err.Error(), tc.want) {
			t.Fatalf("seed %d with the coordinator acting above its HW: %v, want a failure with %q: the test no longer shows what it is for", tc.seed, r.err, tc.want)
		}
		if r = runSeed(base, tc.seed, nil, 60); r.err != nil {
			t.Fatalf("seed %d: %v\nlast events:\n%s", tc.seed, r.err, r.trace)
		}
	}
}
