// Package single tests one Brook broker as a process: what a person or
// an operator does with `make run` (kill -9, SIGTERM, restart, bad config,
// kcat against it).
package single

import (
	"fmt"
	"os"
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
)

// brookBin is the binary under test, built once in TestMain (or BROOK_BIN).
var brookBin string

func TestMain(m *testing.M) {
	bin, remove, err := testutil.BrookBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "build brook:", err)
		os.Exit(1)
	}
	brookBin = bin
	code := m.Run()
	remove()
	os.Exit(code)
}
