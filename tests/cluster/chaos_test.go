package cluster

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/workload"
)

// Fault pacing: a fault every faultGapMin..faultGapMax, a SIGSTOP lasting
// pauseMin..pauseMax (sometimes past the session timeout, so that the
// paused broker's session expires under it).
const (
	faultGapMin = 2 * time.Second
	faultGapMax = 5 * time.Second
	pauseMin    = time.Second
	pauseMax    = sessionTimeout + 3*time.Second
)

// faultKind is one way the chaos test hurts a broker.
type faultKind string

const (
	faultKill9        faultKind = "kill-9"            // SIGKILL a random broker, start it again
	faultKillLeader   faultKind = "kill-9-leader"     // SIGKILL the leader of a random partition
	faultKillCtrl     faultKind = "kill-9-controller" // SIGKILL the controller
	faultPause        faultKind = "sigstop"           // SIGSTOP, wait, SIGCONT
	faultCleanRestart faultKind = "sigterm-restart"   // controlled shutdown and start
	faultPauseCtrl    faultKind = "sigstop-controller"
	chaosTopic                  = "chaos"
	chaosPartitions             = 6
	chaosRecoveryWait           = 3 * time.Minute
)

var faultKinds = []faultKind{faultKill9, faultKillLeader, faultKillCtrl, faultPause, faultCleanRestart, faultPauseCtrl}

// TestChaos writes a known sequence to every partition of an RF=3,
// min.insync.replicas=2 topic with an idempotent acks=all producer while
// brokers (leaders and the controller among them) are killed, paused and
// restarted one at a time. Once all are back it checks that every
// acknowledged record is in the log exactly once, at the offset it was
// acknowledged with, in order; that nothing a concurrent read_committed
// consumer saw disappeared or changed; and that every ISR is whole again.
func TestChaos(t *testing.T) {
	duration := chaosRunTime(t)
	seed := chaosSeed(t)
	t.Logf("chaos: faults for %v, seed %d (CHAOS_SEED=%d replays the schedule)", duration, seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	c := startCluster(t, 3, map[string]string{
		"min.insync.replicas":            "2",
		"unclean.leader.election.enable": "false",
		// Quicker ISR shrinks under SIGSTOP than the 30 s default.
		"replica.lag.time.max.ms": "10000",
	})
	c.createTopic(chaosTopic, chaosPartitions, nil)
	c.converge(c.ids, healthy(chaosTopic, chaosPartitions, c.ids))

	w := workload.StartWriter(t, c.bootstrap(), chaosTopic, chaosPartitions)
	r := workload.StartReader(t, c.bootstrap(), chaosTopic, chaosPartitions)

	faults := runFaults(t, rng, duration, faultKinds, "chaos", func(kind faultKind) (string, error) {
		return c.inject(rng, kind), nil
	})

	// Every broker back, then: the writer's records all get an outcome,
	// every ISR is whole, and the final log is read and checked.
	c.resumeAll()
	c.waitRegistered(c.ids)
	w.Finish(t, chaosRecoveryWait)
	v := c.converge(c.ids, healthy(chaosTopic, chaosPartitions, c.ids))
	t.Logf("all brokers back, every ISR whole: %s", v)
	r.Stop()
	final := workload.ReadFinal(t, c.bootstrap(), chaosTopic, chaosPartitions, chaosRecoveryWait)
	rep, violations := workload.Verify(chaosTopic, chaosPartitions, final, w, r)
	workload.ReportViolations(t, violations)
	if errs := w.Errors(); len(errs) > 0 {
		t.Logf("producer errors (those records failed; they may or may not be in the log): %v", errs)
	}

	t.Logf("chaos checked: %s; records produced %d (skipped for a full buffer %d), acknowledged %d, failed %d; "+
		"final log %d records over %d partitions; concurrent reader read %d. "+
		"Checked: every acknowledged record exactly once at its acknowledged offset, seqs strictly increasing per partition "+
		"(no duplicates, in order), nothing the reader saw disappeared or changed, every ISR whole at the end.",
		faults.summary(), rep.Produced, rep.Skipped, rep.Acked, rep.Failed, rep.Final, chaosPartitions, rep.ReadDuringRun)
	if rep.Acked == 0 {
		t.Error("no record was acknowledged during the run: the chaos test checked nothing")
	}
}

// inject applies one fault and brings the broker back; it returns what it did.
func (c *cluster) inject(rng *rand.Rand, kind faultKind) string {
	c.t.Helper()
	id := c.ids[rng.IntN(len(c.ids))]
	switch kind {
	case faultKillCtrl, faultPauseCtrl:
		if ctrl, err := c.zkv.controllerID(); err == nil && ctrl >= 0 {
			id = ctrl
		}
	case faultKillLeader:
		p := int32(rng.IntN(chaosPartitions))
		if st, err := c.zkv.partitionState(chaosTopic, p); err == nil && slices.Contains(c.ids, st.Leader) {
			id = st.Leader
		}
	}
	switch kind {
	case faultKill9, faultKillLeader, faultKillCtrl:
		c.kill9(id)
		c.restart(id)
		return fmt.Sprintf("%s broker %d, restarted", kind, id)
	case faultPause, faultPauseCtrl:
		d := randDuration(rng, pauseMin, pauseMax)
		c.pause(id)
		workload.Wait(d)
		c.resume(id)
		return fmt.Sprintf("%s broker %d for %v", kind, id, d.Round(time.Millisecond))
	case faultCleanRestart:
		c.restart(id)
		return fmt.Sprintf("%s broker %d", kind, id)
	}
	c.t.Fatalf("unknown fault %q", kind)
	return ""
}

func randDuration(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

func sum(m map[faultKind]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// faultRun is what a chaos test's fault loop did: faults by kind, and the
// brokers that did not come back from an immediate restart.
type faultRun struct {
	counts          map[faultKind]int
	restartFailures []string
	// asked is the duration runFaults was given, took how long it ran.
	asked, took time.Duration
}

// runFaults injects a fault every faultGapMin..faultGapMax, logging each
// with label, for duration and at least until every kind of kinds has been
// injected once (nextFault draws the missing ones first), so that even
// make test's short runs hit every fault kind; it collects inject's errors
// and fails t if a kind was never injected.
func runFaults(t *testing.T, rng *rand.Rand, duration time.Duration, kinds []faultKind, label string, inject func(faultKind) (string, error)) faultRun {
	t.Helper()
	run := faultRun{counts: map[faultKind]int{}, asked: duration}
	start := time.Now()
	for time.Since(start) < duration || len(missingFaults(kinds, run.counts)) > 0 {
		workload.Wait(randDuration(rng, faultGapMin, faultGapMax))
		kind := nextFault(rng, kinds, run.counts)
		desc, err := inject(kind)
		run.counts[kind]++
		if err != nil {
			run.restartFailures = append(run.restartFailures, err.Error())
			desc += " (" + err.Error() + ")"
		}
		t.Logf("%s %v: %s", label, time.Since(start).Round(time.Second), desc)
	}
	run.took = time.Since(start)
	if missing := missingFaults(kinds, run.counts); len(missing) > 0 {
		t.Errorf("%s: fault kinds never injected: %v", label, missing)
	}
	return run
}

// nextFault draws the next fault kind: one not injected yet (by counts)
// while there is one, else any of kinds, whose repeats weigh the draw.
func nextFault(rng *rand.Rand, kinds []faultKind, counts map[faultKind]int) faultKind {
	if missing := missingFaults(kinds, counts); len(missing) > 0 {
		return missing[rng.IntN(len(missing))]
	}
	return kinds[rng.IntN(len(kinds))]
}

// missingFaults lists the distinct kinds that counts has none of, in the
// order of kinds.
func missingFaults(kinds []faultKind, counts map[faultKind]int) []faultKind {
	var out []faultKind
	for _, k := range kinds {
		if counts[k] == 0 && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// summary is "N faults (kind=n ...) in 52s (asked for 30s)" for a test's
// closing log line.
func (f faultRun) summary() string {
	var faults []string
	for _, k := range slices.Sorted(maps.Keys(f.counts)) {
		faults = append(faults, fmt.Sprintf("%s=%d", k, f.counts[k]))
	}
	return fmt.Sprintf("%d faults (%s) in %v (asked for %v)", sum(f.counts), strings.Join(faults, " "), f.took.Round(time.Second), f.asked)
}

// reportRestartFailures fails t with the first few brokers that did not
// survive an immediate restart.
func (f faultRun) reportRestartFailures(t *testing.T) {
	t.Helper()
	for i, e := range f.restartFailures {
		if i == 3 {
			t.Errorf("... and %d more brokers that did not survive an immediate restart", len(f.restartFailures)-i)
			break
		}
		t.Error(e)
	}
}

// TestFaultScheduleCoversEveryKind checks, without a cluster, that
// nextFault draws every distinct kind of each chaos test within as many
// faults as there are kinds, whatever the seed: what lets make test's
// short chaos runs still hit every fault kind.
func TestFaultScheduleCoversEveryKind(t *testing.T) {
	for _, kinds := range [][]faultKind{faultKinds, groupFaultKinds, txnFaultKinds} {
		distinct := len(missingFaults(kinds, nil))
		for seed := range uint64(100) {
			rng := rand.New(rand.NewPCG(seed, seed))
			counts := map[faultKind]int{}
			for range distinct {
				counts[nextFault(rng, kinds, counts)]++
			}
			if missing := missingFaults(kinds, counts); len(missing) > 0 {
				t.Fatalf("seed %d: %d faults drawn from %v, never %v", seed, distinct, kinds, missing)
			}
		}
	}
}
