package cluster

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/internal/workload"
)

// The transactional chaos test's own faults: its producers' transaction
// coordinators, killed and started again the slow way or at once.
const (
	faultKillTxnCoord    faultKind = "kill-9-txn-coordinator"
	faultKillTxnCoordNow faultKind = "kill-9-txn-coordinator-restart-now"
	// A paused coordinator may lose its __transaction_state partitions
	// while stopped and wake up still acting on them: a zombie.
	faultPauseTxnCoord faultKind = "sigstop-txn-coordinator"

	chaosTxnTopic       = "chaos-txn"
	chaosTxnProducers   = 3
	chaosTxnStateTopicN = 3
	txnStateTopic       = "__transaction_state"
)

var chaosTxnDuration = flag.Duration("chaos.txn-duration", 0,
	"how long TestChaosTxn injects faults (default $CHAOS_TXN_DURATION, else -chaos.duration, else 30s)")

// txnFaultKinds weighs the transaction coordinators: they are the point.
var txnFaultKinds = []faultKind{faultKillTxnCoord, faultKillTxnCoordNow, faultKillTxnCoordNow, faultPauseTxnCoord,
	faultKill9, faultKillNow, faultKillCtrl, faultKillLeader, faultPause}

// TestChaosTxn is the chaos test of transactions: transactional producers
// each write transactions of a few records over several partitions of an
// RF=3, min.insync.replicas=2 topic and commit or abort them at random,
// while brokers (their transaction coordinators most often, the
// controller, partition leaders) are killed with SIGKILL and started
// again, or paused (a paused coordinator may wake up a zombie). A
// read_committed consumer reads throughout. Once every
// broker is back the producers must commit again, every partition's last
// stable offset must reach its high watermark (no transaction left
// hanging), and verifyTxnChaos checks the final read_committed log: every
// acknowledged commit read exactly once, nothing of a transaction never
// committed, a transaction whose commit failed whole or not at all.
func TestChaosTxn(t *testing.T) {
	duration := chaosTxnRunTime(t)
	seed := chaosSeed(t)
	t.Logf("transaction chaos: faults for %v, seed %d (CHAOS_SEED=%d replays the schedule)", duration, seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	c := startCluster(t, 3, map[string]string{
		"min.insync.replicas":                  "2",
		"unclean.leader.election.enable":       "false",
		"replica.lag.time.max.ms":              "10000",
		"transaction.state.log.num.partitions": fmt.Sprint(chaosTxnStateTopicN),
		// Transactions a dead client left open are aborted within seconds
		// of their timeout, so that the final check does not wait long.
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
	})
	c.createTopic(chaosTxnTopic, chaosPartitions, nil)
	txnIDs := chaosTxnIDs()
	producers := workload.NewTxnProducers(c.bootstrap(), chaosTxnTopic, chaosPartitions, txnIDs, seed)
	c.txnStateReady(txnIDs)
	c.converge(c.ids, healthy(chaosTxnTopic, chaosPartitions, c.ids))

	r := workload.StartReader(t, c.bootstrap(), chaosTxnTopic, chaosPartitions)
	producers.Start(t)

	faults := runFaults(t, rng, duration, txnFaultKinds, "transaction chaos", func(kind faultKind) (string, error) {
		return c.injectTxnFault(rng, kind, txnIDs)
	})

	// Every broker back and every ISR whole, then the producers must
	// commit again before they stop.
	c.resumeAll()
	c.waitRegistered(c.ids)
	c.converge(c.ids, func(v clusterView) error {
		if err := v.checkTopicHealthy(txnStateTopic, chaosTxnStateTopicN, 3, c.ids, true); err != nil {
			return err
		}
		return v.checkTopicHealthy(chaosTxnTopic, chaosPartitions, 3, c.ids, true)
	})
	recovered := time.Now()
	testutil.Eventually(t, chaosRecoveryWait, func() error {
		if last := producers.Log.LastCommitAt(); !last.After(recovered) {
			return fmt.Errorf("no commit acknowledged since every broker came back at %s; errors %v",
				recovered.Format("15:04:05"), producers.Log.Errors())
		}
		return nil
	})
	producers.Stop()
	workload.WaitStable(t, kadm.NewClient(testutil.Client(t, c.bootstrap())), chaosTxnTopic, chaosRecoveryWait)
	r.Stop()
	final := workload.ReadFinal(t, c.bootstrap(), chaosTxnTopic, chaosPartitions, chaosRecoveryWait)

	txns := producers.Log.Snapshot()
	changed := r.Changed()
	for _, ch := range changed {
		t.Errorf("the concurrent reader saw a record change: %s", ch)
	}
	rep, violations := workload.VerifyTxn(chaosTxnTopic, txns, final, r.Seen())
	workload.ReportViolations(t, violations)
	faults.reportRestartFailures(t)
	if errs := producers.Log.Errors(); len(errs) > 0 {
		t.Logf("producer errors (those transactions were aborted, or their outcome is unknown): %v", errs)
	}
	t.Logf("transaction chaos checked: %s; %d producers, %d transactions: %d committed, %d aborted, "+
		"%d of unknown outcome (%d of them visible); final read_committed log %d records over %d partitions; concurrent reader read %d. "+
		"Checked: every committed transaction read whole exactly once, none of an aborted one, unknown ones whole or not at all, "+
		"records in order and on their partitions, nothing the reader saw disappeared, last stable offset = high watermark at the end.",
		faults.summary(), chaosTxnProducers, len(txns), rep.Committed, rep.Aborted,
		rep.Unknown, rep.UnknownSeen, rep.Final, chaosPartitions, rep.ReadDuringRun)
	if rep.Committed == 0 || rep.Aborted == 0 {
		t.Errorf("%d transactions committed and %d aborted during the run: the transaction chaos test checked too little", rep.Committed, rep.Aborted)
	}
}

// chaosTxnIDs are the transactional ids of TestChaosTxn's producers.
func chaosTxnIDs() []string {
	var ids []string
	for i := range chaosTxnProducers {
		ids = append(ids, fmt.Sprintf("chaos-txn-%d", i))
	}
	return ids
}

// injectTxnFault applies one fault of the transactional chaos test: the
// transaction coordinator's kills and pauses here, the others through
// injectGroupFault (which hands the slow-restart ones to inject).
func (c *cluster) injectTxnFault(rng *rand.Rand, kind faultKind, txnIDs []string) (string, error) {
	c.t.Helper()
	if kind != faultKillTxnCoord && kind != faultKillTxnCoordNow && kind != faultPauseTxnCoord {
		return c.injectGroupFault(rng, kind)
	}
	txnID := txnIDs[rng.IntN(len(txnIDs))]
	id := c.ids[rng.IntN(len(c.ids))]
	coord, err := c.txnCoordinatorNow(txnID)
	if err == nil {
		id = coord
	}
	desc := fmt.Sprintf("%s broker %d (of %s; FindCoordinator error %v)", kind, id, txnID, err)
	if kind == faultPauseTxnCoord {
		d := randDuration(rng, pauseMin, pauseMax)
		c.pause(id)
		workload.Wait(d)
		c.resume(id)
		return fmt.Sprintf("%s for %v", desc, d.Round(time.Millisecond)), nil
	}
	c.kill9(id)
	if kind == faultKillTxnCoordNow {
		return desc, c.restartNow(id)
	}
	c.restart(id)
	return desc, nil
}

// txnCoordinatorNow asks the cluster once for txnID's transaction
// coordinator (FindCoordinator key type 1), through a new client.
func (c *cluster) txnCoordinatorNow(txnID string) (int32, error) {
	return c.findCoordinatorNow(txnID, (*kadm.Client).FindTxnCoordinators)
}

// txnStateReady asks for every transactional id's coordinator until each
// is named (the first ask creates __transaction_state), then waits for
// that topic's ISRs to be whole.
func (c *cluster) txnStateReady(txnIDs []string) {
	c.t.Helper()
	for _, id := range txnIDs {
		testutil.Eventually(c.t, convergeTimeout, func() error {
			_, err := c.txnCoordinatorNow(id)
			return err
		})
	}
	c.converge(c.ids, healthy(txnStateTopic, chaosTxnStateTopicN, c.ids))
}

// chaosTxnRunTime is how long TestChaosTxn injects faults:
// -chaos.txn-duration, $CHAOS_TXN_DURATION, else what TestChaos gets from
// -chaos.duration or $CHAOS_DURATION (so make chaos runs all for
// DURATION), else defaultChaosDuration.
func chaosTxnRunTime(t *testing.T) time.Duration {
	t.Helper()
	return chaosTestRunTime(t, *chaosTxnDuration, "CHAOS_TXN_DURATION", defaultChaosDuration)
}
