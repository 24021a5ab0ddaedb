package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/controller/zkstore"
	"github.com/brook-mq/brook/internal/testutil"
)

// TestZKSessionRenewsAfterExpiry ends the session under the wrapper (a
// closed session answers like an expired one) and checks that the next
// operation runs on a new session after the broker re-registered.
func TestZKSessionRenewsAfterExpiry(t *testing.T) {
	zk := testutil.StartZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := dialZKSession(ctx, zkstore.Options{Connect: zk.Connect() + "/renew", SessionTimeout: 6 * time.Second}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	registrations := 0
	s.renewed = func(ctx context.Context, st store.Store) error {
		registrations++
		_, err := st.Create(ctx, "/registered", nil, store.Ephemeral)
		return err
	}
	if err := store.EnsurePath(ctx, s, "/data"); err != nil {
		t.Fatal(err)
	}
	first := s.SessionID()
	s.cur.Load().Close()
	if _, _, err := s.Get(ctx, "/data"); err != nil {
		t.Fatalf("get after expiry: %v", err)
	}
	if s.SessionID() == first || registrations != 1 {
		t.Fatalf("session %x (was %x), %d registrations; want a new session registered once", s.SessionID(), first, registrations)
	}
	if ok, _, err := s.Exists(ctx, "/registered"); err != nil || !ok {
		t.Fatalf("ephemeral registration of the new session: %v %v", ok, err)
	}
	if _, _, err := s.Get(ctx, "/missing"); !errors.Is(err, store.ErrNoNode) {
		t.Fatalf("ordinary errors pass through: %v", err)
	}
}
