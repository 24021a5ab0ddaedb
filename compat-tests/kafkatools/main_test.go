// Package kafkatools runs Apache Kafka's own command-line tools (Kafka 4.x,
// from compat-tests/bin) against a Brook broker, one scenario per test. The
// core scenarios (topics, console group commits, consumer groups, configs,
// perf tools) run once per harness.Releases, Kafka 3.9's tools included.
package kafkatools

import (
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// brookBin is the broker binary: $BROOK_BIN, or a build made once here.
var brookBin string

func TestMain(m *testing.M) { harness.Main(m, &brookBin) }
