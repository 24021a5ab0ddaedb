package sim

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
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
const defaultSeeds = 1000

// simBase is the directory the seeds' log directories go in: on tmpfs
// when the machine has one, since the logs' fsyncs cost wall time and the
// file system is not what the simulation checks (yet).
func simBase(t *testing.T) string {
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

// seedResult is one seed's run.
type seedResult struct {
	seed  int64
	err   error
	steps int
	trace string
	stats Stats
}

// runSeeds runs seeds first..first+n-1, GOMAXPROCS of them at a time (each
// seed is a cluster of its own on one goroutine, sharing nothing with the
// others, so it runs as it would alone), and returns the results in seed
// order. Seeds are started in order and none after a seed that failed, so
// the last result is the lowest failing seed whatever the interleaving:
// every seed below it ran to the end.
// keep, when set, picks the seeds to run by their default config (the
// others are left out, with an empty result).
func runSeeds(t *testing.T, first int64, n int, keep func(Config) bool, set func(*Config)) []seedResult {
	t.Helper()
	// A seed's heap is a few MB and mostly short-lived (events, messages,
	// read buffers): collecting at 4x rather than 2x the live heap saves
	// about a tenth of the CPU for some 12 MB more.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	base := simBase(t)
	results := make([]seedResult, n)
	end := first + int64(n)
	var mu sync.Mutex
	next, lowestFailed := first, end
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for {
				mu.Lock()
				seed := next
				if seed >= lowestFailed {
					mu.Unlock()
					return
				}
				next++
				mu.Unlock()
				if keep != nil && !keep(DefaultConfig(seed, "")) {
					continue
				}
				r := runSeed(base, seed, set, *traceFlag)
				mu.Lock()
				results[seed-first] = r
				if r.err != nil && seed < lowestFailed {
					lowestFailed = seed
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if lowestFailed < end {
		return results[:lowestFailed-first+1]
	}
	return results
}

// runSeed runs one seed in a log directory of its own under base, removed
// when the seed is done so that a thousand seeds do not pile up on tmpfs.
func runSeed(base string, seed int64, set func(*Config), traceLen int) seedResult {
	dir, err := os.MkdirTemp(base, fmt.Sprintf("seed-%d-", seed))
	if err != nil {
		return seedResult{seed: seed, err: err}
	}
	defer os.RemoveAll(dir)
	cfg := DefaultConfig(seed, dir)
	if set != nil {
		set(&cfg)
	}
	c := New(cfg)
	c.Scheduler().TraceLen = traceLen
	err = c.Run()
	return seedResult{seed: seed, err: err, steps: c.Scheduler().Steps(), trace: c.Scheduler().Trace(), stats: c.Stats()}
}

// lastFailure is the failing seed's result (the last, see runSeeds), nil
// when every seed passed.
func lastFailure(results []seedResult) *seedResult {
	if len(results) > 0 && results[len(results)-1].err != nil {
		return &results[len(results)-1]
	}
	return nil
}

// TestSim runs the simulation of the real replica and controller code over
// many seeds; every invariant must hold in each.
func TestSim(t *testing.T) {
	first, n := seeds()
	results := runSeeds(t, first, n, nil, nil)
	if r := lastFailure(results); r != nil {
		t.Fatalf("seed %d: %v\nreplay: go test ./sim -run 'TestSim$' -seed %d\nlast events:\n%s", r.seed, r.err, r.seed, r.trace)
	}
	var total Stats
	for _, r := range results {
		st := r.stats
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
		total.Reassignments += st.Reassignments
		total.ReassignmentsDone += st.ReassignmentsDone
		total.ReassignCancels += st.ReassignCancels
		total.ReassignReplaced += st.ReassignReplaced
		total.TxnOffsetsVisible += st.TxnOffsetsVisible
		total.TxnOffsetsUnstable += st.TxnOffsetsUnstable
		total.Retries += st.Retries
		total.Duplicates += st.Duplicates
		total.EpochBumps += st.EpochBumps
	}
	t.Logf("%d seeds from %d (%d at a time): %d events, %d records acknowledged at acks=all (%d retries, %d duplicates answered, %d epoch bumps), %d offset commits acknowledged, %d group joins and %d member commits acknowledged, %d transactions committed and %d aborted, %d transactional offset commits made visible and %d fetches unstable, %d records delivered to consumers, %d topics created and %d deleted, %d reassignments requested and %d completed (%d cancelled and %d replaced in progress), %d leader epochs, %d crashes, %d controlled shutdowns",
		n, first, runtime.GOMAXPROCS(0), total.Events, total.Acked, total.Retries, total.Duplicates, total.EpochBumps, total.Commits, total.Joins, total.MemberCommits, total.TxnCommitted, total.TxnAborted, total.TxnOffsetsVisible, total.TxnOffsetsUnstable, total.ConsumerRecords, total.TopicsCreated, total.TopicsDeleted, total.Reassignments, total.ReassignmentsDone, total.ReassignCancels, total.ReassignReplaced, total.LeaderEpochs, total.Crashes, total.Shutdowns)
}

// TestSimReplays: a seed replays exactly (same events, same trace), or a
// failing seed's replay command would show something else. Seed 3 runs
// the transactional workload and the topic churn, seed 4 the groups, seed
// 1 both coordinators with transactional offset commits. Both runs of
// every seed go at once, as TestSim runs seeds side by side, so that a seed
// that another running beside it could disturb is caught too.
func TestSimReplays(t *testing.T) {
	base := simBase(t)
	seeds := []int64{3, 4, 1, 3, 4, 1}
	results := make([]seedResult, len(seeds))
	var wg sync.WaitGroup
	for i, seed := range seeds {
		wg.Go(func() { results[i] = runSeed(base, seed, nil, 1<<20) })
	}
	wg.Wait()
	half := len(seeds) / 2
	for i, r := range results[:half] {
		again := results[i+half]
		if r.err != nil || again.err != nil {
			t.Fatalf("seed %d: %v, then %v", r.seed, r.err, again.err)
		}
		if r.steps != again.steps || r.trace != again.trace {
			t.Fatalf("seed %d ran %d then %d events; traces equal: %v", r.seed, r.steps, again.steps, r.trace == again.trace)
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
	if r := lastFailure(runSeeds(t, first, n, keep, set)); r != nil {
		return fmt.Errorf("seed %d, after %d events: %w", r.seed, r.steps, r.err)
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
// acknowledged commit. It runs the member seeds (the even ones) of the
// seeds TestSim runs, and the failure must be the members': seed 106
// finds it (generation 1 with two leaders), and 422 is the only other of
// the first 500 member seeds to. The members commit a few times a second
// when stable, so an acknowledged commit seldom lies between a new
// leader's high watermark and its log end when it loads; checking their
// offsets at the leader after every event finds no more seeds. (It
// searched from seed 2001 while the first 2,000 did not find it. Without
// the fault, with the simple consumers left out, seed 2688 failed through
// a duplicated cancel that the reassignment model now lets stand,
// TestSimDuplicatedCancel, and seed 1224 through a duplicate acknowledged
// after a cancel removed a replica holding it, which checkAcks lets stand;
// member seeds 1 to 3000 pass without the fault now.)
func TestSimFindsCoordinatorLoadToHWByMembers(t *testing.T) {
	first, n := seeds()
	r := lastFailure(runSeeds(t, first, n, runsMembers, func(cfg *Config) {
		cfg.GroupFaults = group.Faults{LoadToHighWatermark: true}
		cfg.NoSimpleConsumers = true
	}))
	if r == nil {
		t.Fatalf("seeds %d to %d did not find the reverted coordinator load bound through the group members", first, first+int64(n)-1)
	}
	if !strings.HasPrefix(r.err.Error(), membersGroup+": ") {
		t.Fatalf("seed %d found something other than the members' checks: %v", r.seed, r.err)
	}
	t.Logf("found: seed %d, after %d events: %v", r.seed, r.steps, r.err)
}

// runsMembers: the seed runs the group members (even seeds).
func runsMembers(cfg Config) bool { return cfg.Membership }
