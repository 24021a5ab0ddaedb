package sim

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/brook-mq/brook/group"
	"github.com/brook-mq/brook/replica"
)

var (
	seedFlag  = flag.Int64("seed", 0, "run only this seed (replay a failure)")
	seedsFlag = flag.Int("seeds", 0, "number of seeds to run (default: the make test budget)")
	firstFlag = flag.Int64("first-seed", 1, "first seed when running many")
	traceFlag = flag.Int("tracelen", 40, "trace lines printed for a failing seed")
)

// defaultSeeds is what `go test ./sim` (and so make test) runs.
const defaultSeeds = 200

// simDir is a directory for one run's logs: on tmpfs when the machine has
// one, since the logs' fsyncs cost wall time and the file system is not
// what the simulation checks (yet).
func simDir(t *testing.T) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "brook-sim-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

func seeds() (first int64, n int) {
	if *seedFlag != 0 {
		return *seedFlag, 1
	}
	n = defaultSeeds
	if *seedsFlag > 0 {
		n = *seedsFlag
	}
	return *firstFlag, n
}

// TestSim runs the simulation of the real replica and controller code over
// many seeds; every invariant must hold in each.
func TestSim(t *testing.T) {
	first, n := seeds()
	var total Stats
	for seed := first; seed < first+int64(n); seed++ {
		c := New(DefaultConfig(seed, simDir(t)))
		c.Scheduler().TraceLen = *traceFlag
		if err := c.Run(); err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./sim -run 'TestSim$' -seed %d\nlast events:\n%s", seed, err, seed, c.Scheduler().Trace())
		}
		st := c.Stats()
		total.Events += st.Events
		total.Acked += st.Acked
		total.LeaderEpochs += st.LeaderEpochs
		total.Crashes += st.Crashes
		total.Shutdowns += st.Shutdowns
		total.Commits += st.Commits
		total.TxnCommitted += st.TxnCommitted
		total.TxnAborted += st.TxnAborted
		total.ConsumerRecords += st.ConsumerRecords
		total.TopicsCreated += st.TopicsCreated
		total.TopicsDeleted += st.TopicsDeleted
		total.Joins += st.Joins
		total.MemberCommits += st.MemberCommits
	}
	t.Logf("%d seeds from %d: %d events, %d records acknowledged at acks=all, %d offset commits acknowledged, %d group joins and %d member commits acknowledged, %d transactions committed and %d aborted, %d records delivered to consumers, %d topics created and %d deleted, %d leader epochs, %d crashes, %d controlled shutdowns",
		n, first, total.Events, total.Acked, total.Commits, total.Joins, total.MemberCommits, total.TxnCommitted, total.TxnAborted, total.ConsumerRecords, total.TopicsCreated, total.TopicsDeleted, total.LeaderEpochs, total.Crashes, total.Shutdowns)
}

// TestSimReplays: a seed replays exactly (same events, same trace), or a
// failing seed's replay command would show something else. Seed 3 runs
// the producer alone, seed 4 the group workload too.
func TestSimReplays(t *testing.T) {
	for _, seed := range []int64{3, 4} {
		run := func() (int, string) {
			c := New(DefaultConfig(seed, simDir(t)))
			c.Scheduler().TraceLen = 1 << 20
			if err := c.Run(); err != nil {
				t.Fatal(err)
			}
			return c.Scheduler().Steps(), c.Scheduler().Trace()
		}
		n1, t1 := run()
		n2, t2 := run()
		if n1 != n2 || t1 != t2 {
			t.Fatalf("seed %d ran %d then %d events; traces equal: %v", seed, n1, n2, t1 == t2)
		}
	}
}

// findsFault runs TestSim's seeds with a fault of the real code switched
// back on and returns the first violation.
func findsFault(t *testing.T, faults replica.Faults) error {
	t.Helper()
	return findsFaults(t, func(cfg *Config) { cfg.Faults = faults })
}

func findsFaults(t *testing.T, set func(*Config)) error {
	t.Helper()
	return findsFaultsIn(t, func(Config) bool { return true }, set)
}

// findsFaultsIn is findsFaults over the seeds whose default config keep
// accepts (those that run the workload the fault is in).
func findsFaultsIn(t *testing.T, keep func(Config) bool, set func(*Config)) error {
	t.Helper()
	first, n := seeds()
	for seed := first; seed < first+int64(n); seed++ {
		cfg := DefaultConfig(seed, "")
		if !keep(cfg) {
			continue
		}
		cfg.Dir = simDir(t)
		set(&cfg)
		c := New(cfg)
		if err := c.Run(); err != nil {
			return fmt.Errorf("seed %d, after %d events: %w", seed, c.Scheduler().Steps(), err)
		}
	}
	return nil
}

// TestSimFindsForgottenISRChange reverts one of Hardening II's failover
// fixes behind replica.Faults — a failed or unanswered AlterPartition
// keeps the ISR change pending — and checks that the seeds TestSim runs
// find it: the controller applied an ISR expansion whose answer was lost,
// the leader forgot it and counted its HW over the smaller ISR, so a
// member of the ISR in ZooKeeper lacks records below the HW.
func TestSimFindsForgottenISRChange(t *testing.T) {
	err := findsFault(t, replica.Faults{ForgetFailedISRChange: true})
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find the reverted pending-ISR fix")
	}
	t.Logf("found: %v", err)
}

// TestSimFindsMissingEpochStart reverts the fix of the epoch recorded at
// election: a new leader that has not written in its epoch answers a
// follower's later epoch with UNDEFINED, the follower keeps its divergent
// tail and appends the new leader's records after it.
func TestSimFindsMissingEpochStart(t *testing.T) {
	err := findsFault(t, replica.Faults{NoEpochStartAtElection: true})
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find the reverted epoch start at election")
	}
	t.Logf("found: %v", err)
}

// TestSimFindsCoordinatorLoadToHW reverts the coordinator load bound
// behind group.Faults: a new coordinator loads its offsets partition only
// up to its high watermark, which trails the previous leader's until the
// followers fetch again, so it answers an offset older than a commit the
// previous coordinator acknowledged.
func TestSimFindsCoordinatorLoadToHW(t *testing.T) {
	err := findsFaultsIn(t, runsGroups, func(cfg *Config) { cfg.GroupFaults = group.Faults{LoadToHighWatermark: true} })
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find the reverted coordinator load bound")
	}
	t.Logf("found: %v", err)
}

// The consumer invariants can fail: each test switches on a modelled bug
// of the read path (ConsumerFaults) and the seeds TestSim runs find it.

func findsConsumerFault(t *testing.T, f ConsumerFaults) error {
	t.Helper()
	return findsFaultsIn(t, func(cfg Config) bool { return cfg.Consumers }, func(cfg *Config) { cfg.ConsumerFaults = f })
}

// runsGroups: the seed runs the group coordinator (even seeds).
func runsGroups(cfg Config) bool { return cfg.Groups > 0 }

// TestSimFindsReadPastHW: a fetch bounded by the log end offset returns
// records above the HW, and the check at read time sees it.
func TestSimFindsReadPastHW(t *testing.T) {
	if err := findsConsumerFault(t, ConsumerFaults{ReadToLogEnd: true}); err == nil {
		t.Fatal("the seeds TestSim runs did not find reads past the HW")
	} else {
		t.Logf("found: %v", err)
	}
}

// TestSimFindsReadOfLostRecords: the same bug without the check at read
// time; the consumers deliver records a leader change later truncates.
func TestSimFindsReadOfLostRecords(t *testing.T) {
	if err := findsConsumerFault(t, ConsumerFaults{ReadToLogEnd: true, NoBoundCheck: true}); err == nil {
		t.Fatal("the seeds TestSim runs did not find consumers reading records later lost")
	} else {
		t.Logf("found: %v", err)
	}
}

// TestSimFindsReadCommittedPastLSO: read_committed bounded by the HW
// delivers records of transactions not yet decided (without the check at
// read time, which would see it first).
func TestSimFindsReadCommittedPastLSO(t *testing.T) {
	if err := findsConsumerFault(t, ConsumerFaults{ReadCommittedToHW: true, NoBoundCheck: true}); err == nil {
		t.Fatal("the seeds TestSim runs did not find read_committed reading past the LSO")
	} else {
		t.Logf("found: %v", err)
	}
}

// TestSimFindsMissingAbortedList: read_committed without the aborted
// transactions of the .txnindex delivers aborted records.
func TestSimFindsMissingAbortedList(t *testing.T) {
	if err := findsConsumerFault(t, ConsumerFaults{NoAbortedList: true}); err == nil {
		t.Fatal("the seeds TestSim runs did not find read_committed delivering aborted records")
	} else {
		t.Logf("found: %v", err)
	}
}

// TestSimFindsControlledShutdownNotPerformed: a controller that answers a
// controlled shutdown without writing its decision leaves the stopping
// broker leader in ZooKeeper, which the check of the answer sees.
func TestSimFindsControlledShutdownNotPerformed(t *testing.T) {
	if err := findsFaults(t, func(cfg *Config) { cfg.ShutdownWritesLost = true }); err == nil {
		t.Fatal("the seeds TestSim runs did not find a controlled shutdown answered without its writes")
	} else {
		t.Logf("found: %v", err)
	}
}

// TestSimFindsDeletedTopicLogKept: brokers that stop a deleted topic's
// partition without deleting its log leave it behind: the re-created
// topic's replica serves the old incarnation's records, or a broker keeps
// a log of a topic that no longer exists.
func TestSimFindsDeletedTopicLogKept(t *testing.T) {
	if err := findsFaultsIn(t, func(cfg Config) bool { return cfg.TopicChurn }, func(cfg *Config) { cfg.StopReplicaKeepsLogs = true }); err == nil {
		t.Fatal("the seeds TestSim runs did not find deleted topics' logs kept")
	} else {
		t.Logf("found: %v", err)
	}
}

// TestSimFindsStaleGenerationCommit: a coordinator that accepts a
// member's commit whatever its generation (group.Faults) lets a member
// fenced by a rebalance commit after the next generation synced.
func TestSimFindsStaleGenerationCommit(t *testing.T) {
	err := findsFaultsIn(t, runsGroups, func(cfg *Config) { cfg.GroupFaults = group.Faults{CommitSkipsGenerationCheck: true} })
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find commits with a stale generation accepted")
	}
	t.Logf("found: %v", err)
}

// TestSimFindsCoordinatorLoadToHWByMembers: the reverted coordinator load
// bound, with the simple consumers left out, is found by the membership
// checks: a new coordinator that forgot a synced generation makes it
// again with another leader, or answers a member's offset older than an
// acknowledged commit.
func TestSimFindsCoordinatorLoadToHWByMembers(t *testing.T) {
	err := findsFaultsIn(t, runsGroups, func(cfg *Config) {
		cfg.GroupFaults = group.Faults{LoadToHighWatermark: true}
		cfg.NoSimpleConsumers = true
	})
	if err == nil {
		t.Fatal("the seeds TestSim runs did not find the reverted coordinator load bound through the group members")
	}
	t.Logf("found: %v", err)
}
