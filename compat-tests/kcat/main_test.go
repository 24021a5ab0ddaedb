// Package kcat runs kcat (librdkafka's command-line client, the Debian
// package) against a Brook broker: metadata, produce, consume and a
// balanced consumer group of two kcat processes.
package kcat

import (
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

var brookBin string

func TestMain(m *testing.M) { harness.Main(m, &brookBin) }
