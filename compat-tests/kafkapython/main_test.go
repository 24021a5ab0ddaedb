// Package kafkapython runs kafka-python (newest 2.x, from the venv that
// scripts/deps.sh --python makes) against a Brook broker: a Python script
// drives the client and prints what it saw as JSON, which the tests check.
package kafkapython

import (
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// brookBin is the broker binary: $BROOK_BIN, or a build made once here.
var brookBin string

func TestMain(m *testing.M) { harness.Main(m, &brookBin) }
