package log

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// blockingClock is a clock whose first read after arm blocks until
// release: it stands in for a slow validation, since validation reads the
// clock for the timestamp bounds.
type blockingClock struct {
	now     func() time.Time
	armed   atomic.Bool
	blocked chan struct{} // closed when the armed read blocks
	release chan struct{}
}

func newBlockingClock(t *testing.T) *blockingClock {
	return &blockingClock{now: newManualClock().Now, blocked: make(chan struct{}), release: make(chan struct{})}
}

func (c *blockingClock) Now() time.Time {
	if c.armed.CompareAndSwap(true, false) {
		close(c.blocked)
		<-c.release
	}
	return c.now()
}

func (c *blockingClock) unblock() {
	select {
	case <-c.release:
	default:
		close(c.release)
	}
}

// openBlockingLog opens a log with timestamp bounds (so that validation
// reads the clock) and arms the clock once it is open.
func openBlockingLog(t *testing.T) (*Log, *blockingClock) {
	cfg := DefaultConfig()
	cfg.TimestampAfterMaxMs = time.Hour.Milliseconds()
	clock := newBlockingClock(t)
	l, err := Open(filepath.Join(t.TempDir(), "t-0"), cfg, Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	t.Cleanup(clock.unblock) // runs first: Close waits for a blocked append
	clock.armed.Store(true)
	return l, clock
}

func appendAsync(l *Log, b []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(b, 0)
		done <- err
	}()
	return done
}

// waitErr waits (with a generous deadline, never a timing assert) for an
// append that must not be held up.
func waitErr(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: still waiting after 30 s", what)
		return nil
	}
}

// TestAppendValidatesOutsideTheLock: validating a batch (CRC, the walk over
// every record, decompression) is most of an append's CPU and needs only
// the batch and the config, so it runs before appendMu: a producer whose
// batch is being validated does not hold up another producer's append.
func TestAppendValidatesOutsideTheLock(t *testing.T) {
	l, clock := openBlockingLog(t)
	ts := newManualClock().Now().UnixMilli()
	slow := appendAsync(l, buildBatch(plainSpec(ts), nRecords(3, 10)))
	<-clock.blocked
	fast := appendAsync(l, buildBatch(plainSpec(ts), nRecords(2, 10)))
	if err := waitErr(t, fast, "append while another batch validates"); err != nil {
		t.Fatal(err)
	}
	clock.unblock()
	if err := waitErr(t, slow, "the validated append"); err != nil {
		t.Fatal(err)
	}
	if leo := l.LogEndOffset(); leo != 5 {
		t.Fatalf("log end offset %d after 5 records", leo)
	}
}

// TestAppendRevalidatesAfterConfigChange: a batch validated before a
// config change is validated again under the lock, so that every batch
// meets the config it is appended under (here a keyless record on a topic
// that became compacted: INVALID_RECORD).
func TestAppendRevalidatesAfterConfigChange(t *testing.T) {
	l, clock := openBlockingLog(t)
	ts := newManualClock().Now().UnixMilli()
	slow := appendAsync(l, buildBatch(plainSpec(ts), []testRecord{{value: []byte("v")}}))
	<-clock.blocked
	cfg := l.Config()
	cfg.Compact = true
	changed := make(chan error, 1)
	go func() {
		l.SetConfig(cfg)
		changed <- nil
	}()
	waitErr(t, changed, "config change while a batch validates")
	clock.unblock()
	if err := waitErr(t, slow, "the validated append"); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("keyless batch appended to a compacted log: %v", err)
	}
	if leo := l.LogEndOffset(); leo != 0 {
		t.Fatalf("log end offset %d", leo)
	}
}
