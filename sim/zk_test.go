package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/controller/store/storetest"
)

// TestZKConformance runs the store conformance suite, which the embedded
// store and ZooKeeper pass, against the simulated ZooKeeper's sessions.
func TestZKConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() store.Store {
		zk := NewZK(NewScheduler(1))
		return func() store.Store { return zk.Connect(6 * time.Second) }
	})
}

// TestZKSessionExpiry: a client cut off for its session timeout in virtual
// time loses its session and its ephemeral node; one back in time keeps both.
func TestZKSessionExpiry(t *testing.T) {
	ctx := context.Background()
	s := NewScheduler(1)
	zk := NewZK(s)
	a, b, watcher := zk.Connect(6*time.Second), zk.Connect(6*time.Second), zk.Connect(6*time.Second)
	for _, p := range []string{"/a", "/b"} {
		sess := a
		if p == "/b" {
			sess = b
		}
		if _, err := sess.Create(ctx, p, nil, store.Ephemeral); err != nil {
			t.Fatal(err)
		}
	}
	_, _, ch, err := watcher.ExistsW(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	a.SetConnected(false)
	b.SetConnected(false)
	if _, _, err := a.Get(ctx, "/a"); !errors.Is(err, ErrConnectionLoss) {
		t.Fatalf("disconnected get: %v, want connection loss", err)
	}
	s.After(3*time.Second, "reconnect b", func() { b.SetConnected(true) })
	for s.Step() {
	}
	if got := s.Now().Sub(simStart); got != 6*time.Second {
		t.Fatalf("expired at %v, want 6s", got)
	}
	if !a.Expired() || b.Expired() {
		t.Fatalf("a expired %v, b expired %v; want true, false", a.Expired(), b.Expired())
	}
	if _, _, err := a.Get(ctx, "/"); !errors.Is(err, store.ErrSessionExpired) {
		t.Fatalf("expired session get: %v", err)
	}
	select {
	case ev := <-ch:
		if ev.Type != store.EventNodeDeleted {
			t.Fatalf("watch got %v, want NodeDeleted", ev.Type)
		}
	default:
		t.Fatal("the watch on /a did not fire")
	}
	if ok, _, _ := watcher.Exists(ctx, "/b"); !ok {
		t.Fatal("/b vanished although its session reconnected in time")
	}
}
