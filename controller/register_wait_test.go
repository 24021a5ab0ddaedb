package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// logSink collects log output and signals each write.
type logSink struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{} // cap 1
}

func newLogSink() *logSink { return &logSink{wrote: make(chan struct{}, 1)} }

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	select {
	case l.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor blocks until the log contains s, failing at a deadline.
func (l *logSink) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for !strings.Contains(l.String(), s) {
		select {
		case <-l.wrote:
		case <-deadline:
			t.Fatalf("log never said %q:\n%s", s, l.String())
		}
	}
}

// TestRegisterBrokerWaitsForLingeringSession: a broker restarted right
// after kill -9 finds its old registration, owned by a session the store
// has not expired yet. It waits (saying so, with the owner session) and
// registers once that session ends, instead of failing as Kafka does.
func TestRegisterBrokerWaitsForLingeringSession(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	old := db.NewSession()
	oldEpoch, err := RegisterBroker(ctx, old, plaintext(1))
	if err != nil {
		t.Fatal(err)
	}
	sink := newLogSink()
	logger := slog.New(slog.NewTextHandler(sink, nil))
	restarted := db.NewSession()
	type result struct {
		epoch int64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		epoch, err := RegisterBroker(ctx, restarted, plaintext(1), WithRegistrationWait(time.Minute, logger))
		done <- result{epoch, err}
	}()
	sink.waitFor(t, fmt.Sprintf("owner_session=0x%x", old.SessionID()))
	if !strings.Contains(sink.String(), "remaining=") {
		t.Errorf("the log does not say how long it waits:\n%s", sink)
	}
	select {
	case r := <-done:
		t.Fatalf("registered while the old session lives: %d, %v", r.epoch, r.err)
	default:
	}
	old.Close() // the store expires the killed broker's session
	r := <-done
	if r.err != nil {
		t.Fatalf("register after the old session expired: %v", r.err)
	}
	if r.epoch <= oldEpoch {
		t.Fatalf("broker epoch did not grow: %d -> %d", oldEpoch, r.epoch)
	}
}

// TestRegisterBrokerClashAfterWait: a live broker holding the id is still
// a clash once the wait is over, and its registration stays.
func TestRegisterBrokerClashAfterWait(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	live := db.NewSession()
	epoch, err := RegisterBroker(ctx, live, plaintext(1))
	if err != nil {
		t.Fatal(err)
	}
	sink := newLogSink()
	second := db.NewSession()
	_, err = RegisterBroker(ctx, second, plaintext(1), WithRegistrationWait(50*time.Millisecond, slog.New(slog.NewTextHandler(sink, nil))))
	if !errors.Is(err, ErrBrokerIDInUse) {
		t.Fatalf("clash after the wait: %v, want ErrBrokerIDInUse", err)
	}
	if !strings.Contains(sink.String(), "waiting for it to expire") {
		t.Errorf("no word of the wait in the log:\n%s", sink)
	}
	_, stat, err := live.Get(ctx, BrokerPath(1))
	if err != nil || stat.Czxid != epoch || stat.EphemeralOwner != live.SessionID() {
		t.Fatalf("live broker's registration changed: %+v, %v", stat, err)
	}
	// Cancelling the caller ends the wait too.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := RegisterBroker(cctx, second, plaintext(1), WithRegistrationWait(time.Hour, nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}
