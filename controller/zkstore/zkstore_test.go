package zkstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/controller/store/storetest"
	"github.com/brook-mq/brook/internal/testutil"
)

func TestParseConnect(t *testing.T) {
	tests := []struct {
		in      string
		servers []string
		chroot  string
		bad     bool
	}{
		{in: "h:2181", servers: []string{"h:2181"}},
		{in: "a:1,b:2/brook", servers: []string{"a:1", "b:2"}, chroot: "/brook"},
		{in: "a:1/x/y/", servers: []string{"a:1"}, chroot: "/x/y"},
		{in: "a:1/", servers: []string{"a:1"}},
		{in: "/chroot", bad: true},
		{in: "a:1/x//y", bad: true},
	}
	for _, tc := range tests {
		servers, chroot, err := ParseConnect(tc.in)
		if (err != nil) != tc.bad {
			t.Fatalf("%q: err %v", tc.in, err)
		}
		if !tc.bad && (!reflect.DeepEqual(servers, tc.servers) || chroot != tc.chroot) {
			t.Fatalf("%q: %v %q", tc.in, servers, chroot)
		}
	}
}

// TestZooKeeperConformance runs the store conformance suite against a real
// ZooKeeper server, each test in its own chroot.
func TestZooKeeperConformance(t *testing.T) {
	zk := testutil.StartZooKeeper(t)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) func() store.Store {
		connect := fmt.Sprintf("%s/conformance/t%d", zk.Connect(), n.Add(1))
		return func() store.Store {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := Dial(ctx, Options{Connect: connect, SessionTimeout: 4 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})

	// The chroot is invisible to the client: paths and events are relative.
	t.Run("Chroot", func(t *testing.T) {
		ctx := context.Background()
		root, err := Dial(ctx, Options{Connect: zk.Connect(), SessionTimeout: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		s, err := Dial(ctx, Options{Connect: zk.Connect() + "/brook/a", SessionTimeout: 4 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, _, ch, err := s.ExistsW(ctx, "/x")
		if err != nil {
			t.Fatal(err)
		}
		if p, err := s.Create(ctx, "/x", []byte("d"), store.Sequential); err != nil || p != "/x0000000000" {
			t.Fatalf("create: %q %v", p, err)
		}
		if _, err := s.Create(ctx, "/x", []byte("d"), 0); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-ch:
			if ev.Type != store.EventNodeCreated || ev.Path != "/x" {
				t.Fatalf("event %+v", ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no event")
		}
		if d, _, err := root.Get(ctx, "/brook/a/x"); err != nil || string(d) != "d" {
			t.Fatalf("seen from the root: %q %v", d, err)
		}
		if err := s.Delete(ctx, "/", store.AnyVersion); !errors.Is(err, store.ErrInvalidPath) {
			t.Fatalf("delete chroot: %v", err)
		}
	})
}

// cutter is a dialer whose network can be cut: open connections are closed
// and new dials fail until it is restored.
type cutter struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (c *cutter) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return nil, errors.New("network cut")
	}
	conn, err := net.DialTimeout(network, addr, timeout)
	if err == nil {
		c.conns = append(c.conns, conn)
	}
	return conn, err
}

func (c *cutter) set(cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = cut
	if cut {
		for _, conn := range c.conns {
			conn.Close()
		}
		c.conns = nil
	}
}

// A lost connection is retried under the same session; a session that
// ZooKeeper expired stays expired: ephemerals gone, calls fail with
// ErrSessionExpired, watches get EventNotWatching.
func TestConnectionLossAndExpiry(t *testing.T) {
	zk := testutil.StartZooKeeper(t)
	ctx := context.Background()
	connect := zk.Connect() + "/expiry"
	observer, err := Dial(ctx, Options{Connect: connect, SessionTimeout: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	network := &cutter{}
	victim, err := Dial(ctx, Options{Connect: connect, SessionTimeout: 2 * time.Second, Dialer: network.dial})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	if _, err := victim.Create(ctx, "/e", nil, store.Ephemeral); err != nil {
		t.Fatal(err)
	}
	session := victim.SessionID()

	// A short cut: the next call is retried and succeeds on the same session.
	network.set(true)
	network.set(false)
	if _, err := victim.Create(ctx, "/after-blip", nil, 0); err != nil {
		t.Fatalf("create after a blip: %v", err)
	}
	if victim.SessionID() != session {
		t.Fatal("session changed after a blip")
	}
	if ok, _, _ := observer.Exists(ctx, "/e"); !ok {
		t.Fatal("ephemeral lost after a blip")
	}

	// A long cut: ZooKeeper expires the session.
	_, _, watch, err := victim.GetW(ctx, "/e")
	if err != nil {
		t.Fatal(err)
	}
	network.set(true)
	testutil.Eventually(t, 30*time.Second, func() error {
		if ok, _, err := observer.Exists(ctx, "/e"); err != nil || ok {
			return fmt.Errorf("ephemeral of the cut-off session still there (err %v)", err)
		}
		return nil
	})
	network.set(false)
	testutil.Eventually(t, 30*time.Second, func() error {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if _, _, err := victim.Exists(cctx, "/"); !errors.Is(err, store.ErrSessionExpired) {
			return fmt.Errorf("client not expired yet: %v", err)
		}
		return nil
	})
	select {
	case ev := <-watch:
		if ev.Type != store.EventNotWatching || !errors.Is(ev.Err, store.ErrSessionExpired) {
			t.Fatalf("watch event %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch not told of the expiry")
	}
	// It stays expired: no silent new session with our ephemerals missing.
	if _, err := victim.Create(ctx, "/e", nil, store.Ephemeral); !errors.Is(err, store.ErrSessionExpired) {
		t.Fatalf("create after expiry: %v", err)
	}
}
