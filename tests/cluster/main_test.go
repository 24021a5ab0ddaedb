// Package cluster tests Brook as a cluster of processes: a real ZooKeeper
// and three brook binaries on loopback, each test with its own, stopped by
// PID at the end. The tests kill -9, SIGSTOP and SIGTERM brokers and check
// what a Kafka cluster in ZooKeeper mode guarantees: one controller,
// brokers that agree on metadata, leaders elected from the ISR, controlled
// shutdown, and nothing acknowledged with acks=all lost (the chaos test).
//
// They need the ZooKeeper jars (scripts/deps.sh --zookeeper) and, for the
// kafka-topics test, the Kafka tool jars (--kafka); make test installs both.
//
// The chaos test injects faults for -chaos.duration (or $CHAOS_DURATION);
// the group chaos test (commits through coordinator failures) for
// -chaos.groups-duration (or $CHAOS_GROUPS_DURATION), else the chaos
// duration; the transactional chaos test (commits and aborts through
// coordinator failures, read read_committed) for -chaos.txn-duration (or
// $CHAOS_TXN_DURATION), else the chaos duration. Each injects at least one
// fault of every kind it has, however long that takes; without a duration
// (make test) that is about all it does, for at least 30 s. make chaos
// DURATION=30m runs the three alone, one after the other, for longer.
// $CHAOS_SEED replays a fault schedule.
package cluster

import (
	"flag"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// brookBin is the broker binary: $BROOK_BIN, or a build made once here.
var brookBin string

// defaultChaosDuration is each chaos test's in make test: short, since
// the long runs are make chaos's; runFaults still injects every fault kind
// at least once, which takes longer than this (a fault every few seconds,
// each taking seconds, six to nine kinds).
const defaultChaosDuration = 30 * time.Second

var (
	chaosDuration = flag.Duration("chaos.duration", 0,
		"how long the chaos tests inject faults, at least one fault of every kind (default $CHAOS_DURATION, else 30s)")
	chaosGroupsDuration = flag.Duration("chaos.groups-duration", 0,
		"how long TestChaosGroups injects faults (default $CHAOS_GROUPS_DURATION, else -chaos.duration)")
)

func TestMain(m *testing.M) {
	flag.Parse()
	testutil.MainWithBrook(m, &brookBin)
}

// chaosRunTime resolves the chaos duration: the flag, then $CHAOS_DURATION,
// then the default.
func chaosRunTime(t *testing.T) time.Duration {
	t.Helper()
	if *chaosDuration > 0 {
		return *chaosDuration
	}
	if d := envDuration(t, "CHAOS_DURATION"); d > 0 {
		return d
	}
	return defaultChaosDuration
}

// envDuration parses $name as a positive Go duration, 0 when unset.
func envDuration(t *testing.T, name string) time.Duration {
	t.Helper()
	env := os.Getenv(name)
	if env == "" {
		return 0
	}
	d, err := time.ParseDuration(env)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive Go duration such as 30m", name, env)
	}
	return d
}

// chaosSeed is $CHAOS_SEED, which replays a chaos test's fault schedule,
// else a new seed.
func chaosSeed(t *testing.T) uint64 {
	t.Helper()
	env := os.Getenv("CHAOS_SEED")
	if env == "" {
		return uint64(time.Now().UnixNano())
	}
	s, err := strconv.ParseUint(env, 10, 64)
	if err != nil {
		t.Fatalf("CHAOS_SEED=%q: %v", env, err)
	}
	return s
}
