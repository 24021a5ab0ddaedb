// Package connect runs Apache Kafka Connect's distributed worker (from
// compat-tests/bin/connect-distributed.sh, jars from scripts/deps.sh
// --connect) against a Brook broker: the worker keeps its configs, source
// offsets and statuses in three compacted topics on Brook.
package connect

import (
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// brookBin is the broker binary: $BROOK_BIN, or a build made once here.
var brookBin string

func TestMain(m *testing.M) { harness.Main(m, &brookBin) }
