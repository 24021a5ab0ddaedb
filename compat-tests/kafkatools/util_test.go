package kafkatools

import (
	"fmt"
	"strconv"
	"testing"
)

func itoa(i int) string { return strconv.Itoa(i) }

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return n
}
