// Package single tests one Brook broker as a process: what a person or
// an operator does with `make run` (kill -9, SIGTERM, restart, bad config,
// kcat against it).
package single

import (
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
)

// brookBin is the binary under test, built once in TestMain (or BROOK_BIN).
var brookBin string

func TestMain(m *testing.M) {
	testutil.MainWithBrook(m, &brookBin)
}
