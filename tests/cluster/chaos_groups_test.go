package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/internal/workload"
)

// The group chaos test's own faults: kill -9 and start again at once,
// while ZooKeeper still holds the dead process's registration.
const (
	faultKillNow      faultKind = "kill-9-restart-now"
	faultKillCoordNow faultKind = "kill-9-coordinator-restart-now"
	faultKillCtrlNow  faultKind = "kill-9-controller-restart-now"

	chaosGroup         = "chaos-group"
	chaosGroupMembers  = 3
	chaosOffsetsTopicN = 3
)

// groupFaultKinds weighs the group's coordinator double: it is the point.
var groupFaultKinds = []faultKind{faultKillCoordNow, faultKillCoordNow, faultKillNow, faultKillCtrlNow, faultKillLeader, faultPause, faultCleanRestart}

// TestChaosGroups is the chaos test of the group coordinator: members of
// a group consume an RF=3 topic and commit after every poll, while brokers
// (the group's coordinator most often, the controller, partition leaders)
// are killed with SIGKILL and started again at once, without waiting for
// ZooKeeper to expire their old registration, or paused, or restarted
// cleanly. A watcher reads the committed offsets with OffsetFetch
// throughout. Once every broker is back the group must commit again, and
// verifyCommits checks that no committed offset ever went back and that
// the final committed offsets hold every acknowledged commit. A broker
// that does not come up after an immediate restart fails the test too.
func TestChaosGroups(t *testing.T) {
	duration := chaosGroupsRunTime(t)
	seed := chaosSeed(t)
	t.Logf("group chaos: faults for %v, seed %d (CHAOS_SEED=%d replays the schedule)", duration, seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	c := startCluster(t, 3, groupsConfig(chaosOffsetsTopicN, map[string]string{
		"min.insync.replicas":     "2",
		"replica.lag.time.max.ms": "10000",
	}))
	c.createTopic(chaosTopic, chaosPartitions, nil)
	adm := kadm.NewClient(testutil.Client(t, c.bootstrap(), clientLog()...))
	c.offsetsReady(adm, chaosOffsetsTopicN, chaosGroup)
	c.converge(c.ids, healthy(chaosTopic, chaosPartitions, c.ids))

	workload.StartWriter(t, c.bootstrap(), chaosTopic, chaosPartitions)
	members := workload.StartMembers(t, c.bootstrap(), chaosGroup, chaosTopic, chaosGroupMembers)

	faults := runFaults(t, rng, duration, groupFaultKinds, "group chaos", func(kind faultKind) (string, error) {
		return c.injectGroupFault(rng, kind)
	})

	// Every broker back and every ISR whole, then the group must commit
	// again before the members stop and the final offsets are read.
	c.resumeAll()
	c.waitRegistered(c.ids)
	c.converge(c.ids, func(v clusterView) error {
		if err := v.checkTopicHealthy(offsetsTopic, chaosOffsetsTopicN, 3, c.ids, true); err != nil {
			return err
		}
		return v.checkTopicHealthy(chaosTopic, chaosPartitions, 3, c.ids, true)
	})
	recovered := time.Now()
	testutil.Eventually(t, chaosRecoveryWait, func() error {
		if _, _, last, errs := members.Log.Counts(); !last.After(recovered) {
			return fmt.Errorf("no commit acknowledged since every broker came back at %s; errors %v", recovered.Format("15:04:05"), errs)
		}
		return nil
	})
	members.Stop()
	final, err := fetchCommitted(c.bootstrap(), chaosGroup, chaosRecoveryWait)
	if err != nil {
		t.Fatalf("final committed offsets: %v", err)
	}
	finalByPartition := map[int32]int64{}
	final.Each(func(o kadm.Offset) {
		if o.Topic == chaosTopic {
			finalByPartition[o.Partition] = o.At
		}
	})

	workload.ReportViolations(t, workload.VerifyCommits(chaosTopic, members.Log.Snapshot(), finalByPartition))
	faults.reportRestartFailures(t)
	acked, fetched, _, errs := members.Log.Counts()
	if len(errs) > 0 {
		t.Logf("commit and OffsetFetch errors (retried; those commits were not acknowledged): %v", errs)
	}
	t.Logf("group chaos checked: %s; %d acknowledged commits and %d OffsetFetch sightings of %d partitions; final committed %v. "+
		"Checked: no committed offset went back, every acknowledged commit <= the final committed offset, every immediate restart came up.",
		faults.summary(), acked, fetched, chaosPartitions, finalByPartition)
	if acked == 0 {
		t.Error("no commit was acknowledged during the run: the group chaos test checked nothing")
	}
}

// injectGroupFault applies one fault of the group chaos test. The faults
// of TestChaos go to inject; the restart-now ones are here, and return an
// error when the broker did not come up.
func (c *cluster) injectGroupFault(rng *rand.Rand, kind faultKind) (string, error) {
	c.t.Helper()
	var id int32
	switch kind {
	case faultKillNow:
		id = c.ids[rng.IntN(len(c.ids))]
	case faultKillCoordNow:
		id = c.ids[rng.IntN(len(c.ids))]
		if coord, err := c.coordinatorNow(chaosGroup); err == nil {
			id = coord
		}
	case faultKillCtrlNow:
		id = c.ids[rng.IntN(len(c.ids))]
		if ctrl, err := c.zkv.controllerID(); err == nil && ctrl >= 0 {
			id = ctrl
		}
	default:
		return c.inject(rng, kind), nil
	}
	c.kill9(id)
	err := c.restartNow(id)
	return fmt.Sprintf("%s broker %d", kind, id), err
}

// coordinatorNow asks the cluster once for group's coordinator, through a
// new client (a cached one may name a dead broker).
func (c *cluster) coordinatorNow(group string) (int32, error) {
	return c.findCoordinatorNow(group, (*kadm.Client).FindGroupCoordinators)
}

// findCoordinatorNow asks the cluster once, with find, for key's
// coordinator, through a new client.
func (c *cluster) findCoordinatorNow(key string, find func(*kadm.Client, context.Context, ...string) kadm.FindCoordinatorResponses) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.bootstrap(), ",")...), kgo.DialTimeout(time.Second))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	r := find(kadm.NewClient(cl), ctx, key)[key]
	if r.Err == nil && !slices.Contains(c.ids, r.NodeID) {
		r.Err = fmt.Errorf("coordinator %d is not a broker of the cluster", r.NodeID)
	}
	return r.NodeID, r.Err
}

// errRestartNow reports a broker that did not survive a start right after
// kill -9.
var errRestartNow = errors.New("broker did not come up when started right after kill -9, with its old registration still in ZooKeeper")

// restartNow starts a killed broker again at once, while its dead
// process's registration is still in ZooKeeper (until the session times
// out). Like Kafka's, the broker must come up and register once that
// registration expires. When it does not, restartNow returns why and
// starts it the slow way (after the registration is gone), so that the
// chaos goes on and its other checks still run.
func (c *cluster) restartNow(id int32) error {
	c.t.Helper()
	p := c.broker(id)
	old, _, err := c.zkv.registration(id)
	if err != nil {
		return err
	}
	err = p.Start()
	if err == nil {
		err = testutil.Poll(4*sessionTimeout, func() error {
			if p.PID() == 0 {
				return nil // exited: nothing more to wait for
			}
			reg, ok, err := c.zkv.registration(id)
			if err != nil {
				return err
			}
			if !ok || reg.owner == old.owner {
				return fmt.Errorf("/brokers/ids/%d not registered by the new process", id)
			}
			return nil
		})
		if err == nil && p.PID() == 0 {
			err = testutil.ErrExited
		}
	}
	if err == nil {
		return nil
	}
	err = fmt.Errorf("broker %d: %w: %w\n--- brook log tail ---\n%s", id, errRestartNow, err, p.LogTail(8))
	c.restart(id)
	return err
}

// chaosGroupsRunTime is how long TestChaosGroups injects faults:
// -chaos.groups-duration, $CHAOS_GROUPS_DURATION, else what TestChaos
// gets from -chaos.duration or $CHAOS_DURATION (so make chaos runs both
// for DURATION), else defaultChaosDuration.
func chaosGroupsRunTime(t *testing.T) time.Duration {
	t.Helper()
	return chaosTestRunTime(t, *chaosGroupsDuration, "CHAOS_GROUPS_DURATION", defaultChaosDuration)
}

// chaosTestRunTime is how long one chaos test injects faults: its own
// flag, else its own environment variable, else the chaos duration if one
// was given, else def.
func chaosTestRunTime(t *testing.T, flagValue time.Duration, env string, def time.Duration) time.Duration {
	t.Helper()
	if flagValue > 0 {
		return flagValue
	}
	if d := envDuration(t, env); d > 0 {
		return d
	}
	if *chaosDuration > 0 || envDuration(t, "CHAOS_DURATION") > 0 {
		return chaosRunTime(t)
	}
	return def
}
