// Package streams runs a Kafka Streams application (Apache Kafka's own
// kafka-streams jar, fetched by scripts/deps.sh --streams) against Brook
// with processing.guarantee=exactly_once_v2, and checks that its output
// stays exact when instances are killed with SIGKILL and restarted.
package streams

import (
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

var brookBin string

func TestMain(m *testing.M) { harness.Main(m, &brookBin) }
