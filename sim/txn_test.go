package sim

import (
	"testing"

	"github.com/brook-mq/brook/txn"
)

// runsTxns: the seed runs the transaction coordinator (odd seeds).
func runsTxns(cfg Config) bool { return cfg.Transactions > 0 }

// TestSimFindsPreparedTxnNotResumed reverts the coordinator's resumption
// of prepared transactions at load behind txn.Faults: a coordinator that
// takes over __transaction_state while its predecessor's PrepareCommit or
// PrepareAbort has its markers still to write never sends them, so the
// transaction hangs: its partitions' last stable offset stays below the
// HW, the producer gets CONCURRENT_TRANSACTIONS for ever, and the
// coordinator still shows it prepared after the quiet phase.
func TestSimFindsPreparedTxnNotResumed(t *testing.T) {
	err := findsFaultsIn(t, runsTxns, func(cfg *Config) { cfg.TxnFaults = txn.Faults{NoResumeOnLoad: true} })
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find prepared transactions left unresumed by a new coordinator")
	}
	t.Logf("found: %v", err)
}

// TestSimFindsInitWithoutFence reverts the fence of InitProducerId behind
// txn.Faults: a producer that starts over while its transaction is open
// gets a bumped epoch at once, and the open transaction is never aborted,
// so it hangs on its partitions.
func TestSimFindsInitWithoutFence(t *testing.T) {
	err := findsFaultsIn(t, runsTxns, func(cfg *Config) { cfg.TxnFaults = txn.Faults{InitForgetsOngoing: true} })
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find InitProducerId forgetting an open transaction")
	}
	t.Logf("found: %v", err)
}

// TestSimFindsTxnActAboveHW reverts the coordinator's wait for its HW
// at load behind txn.Faults: a coordinator that acts on records its load
// read above the HW (as Kafka's does) answers from them and resumes their
// markers, and a failover that loses them has the next coordinator decide
// the transaction again, possibly the other way, or forget partitions the
// producer was told were added, whose batches then hang.
func TestSimFindsTxnActAboveHW(t *testing.T) {
	err := findsFaultsIn(t, runsTxns, func(cfg *Config) { cfg.TxnFaults = txn.Faults{ActAboveHighWatermark: true} })
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find a coordinator acting on records above its HW")
	}
	t.Logf("found: %v", err)
}

// TestSimTxnGivenUpInQuietPhase: late in the quiet phase a producer whose
// AddPartitionsToTxn is still answered CONCURRENT_TRANSACTIONS (the
// previous transaction's markers not written yet, as after a coordinator's
// move that waited for a session expiry) gives the transaction up, as it
// begins none then. Without that, seed 5097 fails ("txn-0: transaction
// of producer 1001 epoch 5 still PrepareAbort at coordinator 1 after the
// quiet phase"), the only one of seeds 1-10000 to. (Seed 2711 was this
// test's until the idempotent producer changed what the seeds draw, seed
// 1101 until the coordinator waited for its HW at load, then seed 1419
// until a new controller started from its broker's metadata cache.)
func TestSimTxnGivenUpInQuietPhase(t *testing.T) {
	r := runSeed(simBase(t), 5097, nil, 60)
	if r.err != nil {
		t.Fatalf("seed 5097: %v\nlast events:\n%s", r.err, r.trace)
	}
	if r.stats.TxnGivenUp == 0 {
		t.Fatal("seed 5097 gave no transaction up: the test no longer shows what it is for")
	}
}

// TestSimTxnGivenUpOpenAtCoordinator: in seed 781, with the simple
// consumers left out, txn-0's AddPartitionsToTxn is accepted at 26.7 s
// but its answer lost; the resend is answered CONCURRENT_TRANSACTIONS
// late in the quiet phase and the producer gives the transaction up,
// which the coordinator has opened. Only its timeout aborts it (at
// 31.8 s, as Kafka's would), and the abort's markers are written 17 ms
// after the quiet phase ends: the final checks wait for that abort
// (awaitsTimeoutAbort). Without the wait the seed fails ("txn-0:
// transaction of producer 1004 epoch 4 still PrepareAbort at coordinator
// 3 after the quiet phase").
func TestSimTxnGivenUpOpenAtCoordinator(t *testing.T) {
	r := runSeed(simBase(t), 781, func(cfg *Config) { cfg.NoSimpleConsumers = true }, 60)
	if r.err != nil {
		t.Fatalf("seed 781: %v\nlast events:\n%s", r.err, r.trace)
	}
	if r.stats.TxnGivenUp == 0 || r.stats.TxnAbortsAwaited == 0 {
		t.Fatalf("seed 781 gave %d transactions up and waited for %d timeout aborts: the test no longer shows what it is for", r.stats.TxnGivenUp, r.stats.TxnAbortsAwaited)
	}
}
