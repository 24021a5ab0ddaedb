package hwwait

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestUntilReturnsOnSuccess: a wait that succeeds ends Until with true
// at once, passing the end it was given.
func TestUntilReturnsOnSuccess(t *testing.T) {
	var got int64 = -1
	ok := Until(context.Background(), 42, func(_ context.Context, end int64) error { got = end; return nil }, quiet, "test", 0)
	if !ok || got != 42 {
		t.Fatalf("Until = %v with end %d, want true with 42", ok, got)
	}
}

// TestUntilStopsWhenContextEnds: a wait that fails because ctx ended
// (the partition was unloaded) ends Until with false, also when the wait
// itself reports no error.
func TestUntilStopsWhenContextEnds(t *testing.T) {
	for _, waitErr := range []error{nil, errors.New("not leader")} {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		ok := Until(ctx, 1, func(context.Context, int64) error { calls++; cancel(); return waitErr }, quiet, "test", 0)
		if ok || calls != 1 {
			t.Fatalf("wait error %v: Until = %v after %d calls, want false after 1", waitErr, ok, calls)
		}
	}
}

// TestUntilRetriesAFailedWait: a failed wait is tried again (after
// RetryAfter) until one succeeds.
func TestUntilRetriesAFailedWait(t *testing.T) {
	calls := 0
	ok := Until(context.Background(), 1, func(context.Context, int64) error {
		calls++
		if calls < 2 {
			return errors.New("not leader")
		}
		return nil
	}, quiet, "test", 0)
	if !ok || calls != 2 {
		t.Fatalf("Until = %v after %d calls, want true after 2", ok, calls)
	}
}
