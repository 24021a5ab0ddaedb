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
// The chaos test injects faults for -chaos.duration (or $CHAOS_DURATION),
// two minutes by default; make chaos DURATION=30m runs it alone for longer.
// $CHAOS_SEED replays a fault schedule.
package cluster

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// brookBin is the broker binary: $BROOK_BIN, or a build made once here.
var brookBin string

// defaultChaosDuration keeps the chaos test inside make test's budget.
const defaultChaosDuration = 2 * time.Minute

var chaosDuration = flag.Duration("chaos.duration", 0,
	"how long the chaos test injects faults (default $CHAOS_DURATION, else 2m)")

func TestMain(m *testing.M) {
	flag.Parse()
	bin, remove, err := testutil.BrookBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	brookBin = bin
	code := m.Run()
	remove()
	os.Exit(code)
}

// chaosRunTime resolves the chaos duration: the flag, then $CHAOS_DURATION,
// then the default.
func chaosRunTime(t *testing.T) time.Duration {
	t.Helper()
	if *chaosDuration > 0 {
		return *chaosDuration
	}
	if env := os.Getenv("CHAOS_DURATION"); env != "" {
		d, err := time.ParseDuration(env)
		if err != nil || d <= 0 {
			t.Fatalf("CHAOS_DURATION=%q: want a positive Go duration such as 30m", env)
		}
		return d
	}
	return defaultChaosDuration
}
