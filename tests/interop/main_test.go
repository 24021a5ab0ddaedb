// Package interop tests Brook against Apache Kafka 3.9 as processes: a real
// ZooKeeper, a Kafka 3.9 broker in ZooKeeper mode (the jars of
// scripts/deps.sh --kafka-3.9) and brook binaries taking turns on the same
// broker.id, log dir and ZooKeeper (issue 17). TestAdopt checks that each
// serves the data the other wrote, byte for byte at the same offsets, and
// continues its producers' sequences. TestMixedMembership runs both kinds
// in one cluster through kill -9 of each; TestRollingMigration rolls three
// Kafka brokers to Brook and back under load, with a crash mid-roll;
// TestControllerMoves drives topic creation, partition addition,
// reassignment and deletion under a controller of each kind, moved by
// kill -9.
//
// They need the ZooKeeper jars (--zookeeper) and Kafka 3.9's
// (--kafka-3.9); make test installs both; make interop runs this package
// alone.
package interop

import (
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
)

// brookBin is the broker binary: $BROOK_BIN, or a build made once here.
var brookBin string

func TestMain(m *testing.M) { testutil.MainWithBrook(m, &brookBin) }
