// Package compaction tests the log cleaner from outside, as processes: a
// broker killed with -9 while it cleans and takes writes, and
// __consumer_offsets staying bounded under many commits.
package compaction

import (
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
)

// brookBin is the binary under test, built once in TestMain (or BROOK_BIN).
var brookBin string

func TestMain(m *testing.M) {
	testutil.MainWithBrook(m, &brookBin)
}
