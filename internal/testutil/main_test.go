package testutil

import (
	"fmt"
	"os"
	"testing"
)

// fakeBin is testdata/fakebrook, built once for this test binary.
var fakeBin string

func TestMain(m *testing.M) {
	bin, remove, err := Build("./internal/testutil/testdata/fakebrook")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBin = bin
	code := m.Run()
	remove()
	os.Exit(code)
}
