package zkstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
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
