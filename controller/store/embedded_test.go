package store_test

import (
	"context"
	"reflect"
	"testing"

	. "github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/controller/store/storetest"
)

func TestEmbeddedConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() Store {
		db, err := Open(Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return func() Store { return db.NewSession() }
	})
}

func mustCreate(t *testing.T, s Store, path, data string, flags CreateFlags) string {
	t.Helper()
	p, err := s.Create(context.Background(), path, []byte(data), flags)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return p
}

func newSession(t *testing.T, dir string) (*DB, *Session) {
	t.Helper()
	db, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, db.NewSession()
}

func TestPersistence(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, s := newSession(t, dir)
	mustCreate(t, s, "/p", "persist", 0)
	mustCreate(t, s, "/p/q", "child", 0)
	mustCreate(t, s, "/e", "ephemeral", Ephemeral)
	mustCreate(t, s, "/p/s_", "", Sequential)
	if _, err := s.Set(ctx, "/p", []byte("v1"), 0); err != nil {
		t.Fatal(err)
	}
	_, stBefore, _ := s.Get(ctx, "/p")
	db.Close()

	db2, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	s2 := db2.NewSession()
	data, st, err := s2.Get(ctx, "/p")
	if err != nil || string(data) != "v1" || st != stBefore {
		t.Fatalf("after reopen: %q %+v %v (before %+v)", data, st, err, stBefore)
	}
	if ok, _, _ := s2.Exists(ctx, "/e"); ok {
		t.Fatal("ephemeral node survived restart")
	}
	kids, _, _ := s2.Children(ctx, "/p")
	if !reflect.DeepEqual(kids, []string{"q", "s_0000000001"}) {
		t.Fatalf("children %v", kids)
	}
	// Sequence numbers and zxids continue rather than restart.
	if p := mustCreate(t, s2, "/p/s_", "", Sequential); p != "/p/s_0000000002" {
		t.Fatalf("sequential after restart: %s", p)
	}
	_, st2, _ := s2.Get(ctx, "/p/s_0000000002")
	if st2.Czxid <= stBefore.Mzxid {
		t.Fatalf("zxid went back: %d <= %d", st2.Czxid, stBefore.Mzxid)
	}
}

func TestExpireSession(t *testing.T) {
	ctx := context.Background()
	db, s := newSession(t, "")
	mustCreate(t, s, "/e", "", Ephemeral)
	db.Expire(s.SessionID())
	if _, _, err := s.Get(ctx, "/"); err != ErrSessionExpired {
		t.Fatalf("after expiry: %v", err)
	}
	if ok, _, _ := db.NewSession().Exists(ctx, "/e"); ok {
		t.Fatal("ephemeral survived expiry")
	}
}
