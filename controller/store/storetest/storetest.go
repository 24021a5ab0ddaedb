// Package storetest is the conformance suite for store.Store
// implementations: every semantic the controller relies on, run against the
// embedded store and against ZooKeeper alike.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	. "github.com/brook-mq/brook/controller/store"
)

// NewTree returns a function opening sessions on a fresh, empty tree (for
// ZooKeeper: a fresh chroot). Sessions are closed by the harness's cleanup.
type NewTree func(t *testing.T) (open func() Store)

// Run runs every conformance test.
func Run(t *testing.T, newTree NewTree) {
	tests := []struct {
		name string
		fn   func(*testing.T, NewTree)
	}{
		{"Create", testCreateSemantics},
		{"SequentialAfterDelete", testSequentialAfterDelete},
		{"VersionsAndStat", testVersionsAndStat},
		{"Delete", testDeleteSemantics},
		{"ChildrenSorted", testChildrenSorted},
		{"Ephemerals", testEphemerals},
		{"Watches", testWatches},
		{"NotWatchingOnSessionEnd", testWatchNotWatchingOnSessionEnd},
		{"Multi", testMulti},
		{"EnsurePathAndCreateRecursive", testEnsurePathAndCreateRecursive},
		{"ConcurrentCreateOneWins", testConcurrentCreateOneWins},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newTree) })
	}
}

func mustCreate(t *testing.T, s Store, path, data string, flags CreateFlags) string {
	t.Helper()
	p, err := s.Create(context.Background(), path, []byte(data), flags)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return p
}

// recv waits for one event with a deadline (it returns as soon as the event arrives).
func recv(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
		return Event{}
	}
}

// noEvent checks that a watch has not fired. The embedded store delivers a
// watch before the triggering call returns; ZooKeeper sends a session its
// notifications before its later replies, so a round trip on the watching
// session first makes the check meaningful there too.
func noEvent(t *testing.T, s Store, ch <-chan Event) {
	t.Helper()
	_, _, _ = s.Exists(context.Background(), "/")
	// A bounded window, not a wait for a condition: it lets an event already
	// received by a client library pass through its delivery goroutine.
	select {
	case ev := <-ch:
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(50 * time.Millisecond):
	}
}

func testCreateSemantics(t *testing.T, newTree NewTree) {
	ctx := context.Background()
	tests := []struct {
		name    string
		setup   []string
		path    string
		flags   CreateFlags
		wantErr error
		want    string
	}{
		{name: "top level", path: "/a", want: "/a"},
		{name: "parent missing", path: "/a/b", wantErr: ErrNoNode},
		{name: "nested", setup: []string{"/a"}, path: "/a/b", want: "/a/b"},
		{name: "exists", setup: []string{"/a"}, path: "/a", wantErr: ErrNodeExists},
		{name: "root", path: "/", wantErr: ErrNodeExists},
		{name: "relative", path: "a", wantErr: ErrInvalidPath},
		{name: "trailing slash", path: "/a/", wantErr: ErrInvalidPath},
		{name: "empty component", path: "//a", wantErr: ErrInvalidPath},
		{name: "dot component", path: "/a/./b", wantErr: ErrInvalidPath},
		{name: "sequential first", setup: []string{"/q"}, path: "/q/n_", flags: Sequential, want: "/q/n_0000000000"},
		{name: "sequential counts earlier children", setup: []string{"/q", "/q/x", "/q/y"}, path: "/q/n_", flags: Sequential, want: "/q/n_0000000002"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTree(t)()
			for _, p := range tc.setup {
				mustCreate(t, s, p, "", 0)
			}
			got, err := s.Create(ctx, tc.path, []byte("d"), tc.flags)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("path = %q, want %q", got, tc.want)
			}
		})
	}
}

func testSequentialAfterDelete(t *testing.T, newTree NewTree) {
	ctx := context.Background()
	s := newTree(t)()
	mustCreate(t, s, "/q", "", 0)
	p0 := mustCreate(t, s, "/q/n_", "", Sequential)
	if err := s.Delete(ctx, p0, AnyVersion); err != nil {
		t.Fatal(err)
	}
	// ZooKeeper never reuses a sequence number; they count creations, while
	// the child version counts deletions too.
	if p := mustCreate(t, s, "/q/n_", "", Sequential); p != "/q/n_0000000001" {
		t.Fatalf("got %s", p)
	}
	if _, st, _ := s.Exists(ctx, "/q"); st.Cversion != 3 {
		t.Fatalf("child version %d, want 3", st.Cversion)
	}
}

func testVersionsAndStat(t *testing.T, newTree NewTree) {
	ctx := context.Background()
	s := newTree(t)()
	mustCreate(t, s, "/a", "v0", 0)
	_, st0, err := s.Get(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	if st0.Version != 0 || st0.DataLength != 2 || st0.Czxid == 0 || st0.Czxid != st0.Mzxid {
		t.Fatalf("stat after create: %+v", st0)
	}
	steps := []struct {
		version int32
		wantErr error
		wantVer int32
	}{
		{version: 1, wantErr: ErrBadVersion},
		{version: 0, wantVer: 1},
		{version: 0, wantErr: ErrBadVersion},
		{version: AnyVersion, wantVer: 2},
		{version: 2, wantVer: 3},
	}
	for i, step := range steps {
		st, err := s.Set(ctx, "/a", []byte(fmt.Sprint(i)), step.version)
		if !errors.Is(err, step.wantErr) {
			t.Fatalf("step %d: err = %v, want %v", i, err, step.wantErr)
		}
		if err == nil && st.Version != step.wantVer {
			t.Fatalf("step %d: version %d, want %d", i, st.Version, step.wantVer)
		}
	}
	data, st, err := s.Get(ctx, "/a")
	if err != nil || string(data) != "4" || st.Czxid != st0.Czxid || st.Mzxid <= st0.Mzxid {
		t.Fatalf("after sets: %q %+v %v", data, st, err)
	}
	if _, err := s.Set(ctx, "/missing", nil, AnyVersion); !errors.Is(err, ErrNoNode) {
		t.Fatalf("set missing: %v", err)
	}
}

func testDeleteSemantics(t *testing.T, newTree NewTree) {
	ctx := context.Background()
	tests := []struct {
		name    string
		path    string
		version int32
		wantErr error
	}{
		{name: "with children", path: "/a", version: AnyVersion, wantErr: ErrNotEmpty},
		{name: "bad version", path: "/a/b", version: 3, wantErr: ErrBadVersion},
		{name: "missing", path: "/x", version: AnyVersion, wantErr: ErrNoNode},
		{name: "ok exact", path: "/a/b", version: 0},
		{name: "ok any", path: "/a/b", version: AnyVersion},
		{name: "root", path: "/", version: AnyVersion, wantErr: ErrInvalidPath},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTree(t)()
			mustCreate(t, s, "/a", "", 0)
			mustCreate(t, s, "/a/b", "", 0)
			err := s.Delete(ctx, tc.path, tc.version)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil {
				if ok, _, _ := s.Exists(ctx, tc.path); ok {
					t.Fatal("still exists")
				}
			}
		})
	}
}

func testChildrenSorted(t *testing.T, newTree NewTree) {
	ctx := context.Background()
	s := newTree(t)()
	mustCreate(t, s, "/p", "", 0)
	for _, c := range []string{"c", "a", "b"} {
		mustCreate(t, s, "/p/"+c, "", 0)
	}
	got, st, err := s.Children(ctx, "/p")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"a", "b", "c"}) || st.NumChildren != 3 || st.Cversion != 3 {
		t.Fatalf("children %v stat %+v", got, st)
	}
	if _, _, err := s.Children(ctx, "/none"); !errors.Is(err, ErrNoNode) {
		t.Fatalf("children of missing: %v", err)
	}
}

func testEphemerals(t *testing.T, newTree NewTree) {
	ctx := context.Background()
	open := newTree(t)
	s1, s2 := open(), open()
	mustCreate(t, s1, "/e", "", Ephemeral)
	mustCreate(t, s1, "/p", "", 0)
	if _, err := s1.Create(ctx, "/e/child", nil, 0); !errors.Is(err, ErrNoChildrenForEphemerals) {
		t.Fatalf("child of ephemeral: %v", err)
	}
	_, st, _ := s2.Exists(ctx, "/e")
	if st.EphemeralOwner != s1.SessionID() {
		t.Fatalf("owner %d, want %d", st.EphemeralOwner, s1.SessionID())
	}
	_, _, w, err := s2.ExistsW(ctx, "/e")
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if ev := recv(t, w); ev.Type != EventNodeDeleted || ev.Path != "/e" {
		t.Fatalf("event %+v", ev)
	}
	if ok, _, _ := s2.Exists(ctx, "/e"); ok {
		t.Fatal("ephemeral survived its session")
	}
	if ok, _, _ := s2.Exists(ctx, "/p"); !ok {
		t.Fatal("persistent node vanished with its session")
	}
	if _, err := s1.Create(ctx, "/z", nil, 0); !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("call on closed session: %v", err)
	}
}

func testWatches(t *testing.T, newTree NewTree) {
	ctx := context.Background()
	type watchKind int
	const (
		getW watchKind = iota
		existsW
		childrenW
	)
	tests := []struct {
		name   string
		kind   watchKind
		path   string
		action func(s Store) error
		want   EventType // 0: must not fire
	}{
		{"get fires on set", getW, "/a", func(s Store) error { _, err := s.Set(ctx, "/a", nil, AnyVersion); return err }, EventNodeDataChanged},
		{"get fires on delete", getW, "/a", func(s Store) error { return s.Delete(ctx, "/a", AnyVersion) }, EventNodeDeleted},
		{"get ignores child create", getW, "/a", func(s Store) error { _, err := s.Create(ctx, "/a/c", nil, 0); return err }, 0},
		{"exists fires on create", existsW, "/new", func(s Store) error { _, err := s.Create(ctx, "/new", nil, 0); return err }, EventNodeCreated},
		{"exists fires on set", existsW, "/a", func(s Store) error { _, err := s.Set(ctx, "/a", nil, AnyVersion); return err }, EventNodeDataChanged},
		{"children fires on create", childrenW, "/a", func(s Store) error { _, err := s.Create(ctx, "/a/c", nil, 0); return err }, EventNodeChildrenChanged},
		{"children fires on child delete", childrenW, "/d", func(s Store) error { return s.Delete(ctx, "/d/k", AnyVersion) }, EventNodeChildrenChanged},
		{"children fires on delete", childrenW, "/b", func(s Store) error { return s.Delete(ctx, "/b", AnyVersion) }, EventNodeDeleted},
		{"children ignores data change", childrenW, "/a", func(s Store) error { _, err := s.Set(ctx, "/a", nil, AnyVersion); return err }, 0},
		{"failed op fires nothing", getW, "/a", func(s Store) error {
			if _, err := s.Set(ctx, "/a", nil, 7); !errors.Is(err, ErrBadVersion) {
				return fmt.Errorf("want bad version, got %v", err)
			}
			return nil
		}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			open := newTree(t)
			s, other := open(), open()
			mustCreate(t, s, "/a", "", 0)
			mustCreate(t, s, "/b", "", 0)
			mustCreate(t, s, "/d", "", 0)
			mustCreate(t, s, "/d/k", "", 0)
			var ch <-chan Event
			var err error
			switch tc.kind {
			case getW:
				_, _, ch, err = s.GetW(ctx, tc.path)
			case existsW:
				_, _, ch, err = s.ExistsW(ctx, tc.path)
			case childrenW:
				_, _, ch, err = s.ChildrenW(ctx, tc.path)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.action(other); err != nil {
				t.Fatal(err)
			}
			if tc.want == 0 {
				noEvent(t, s, ch)
				return
			}
			ev := recv(t, ch)
			if ev.Type != tc.want || ev.Path != tc.path {
				t.Fatalf("event %+v, want %v on %s", ev, tc.want, tc.path)
			}
			// One-shot: a second change does not fire the same watch again.
			if _, err := other.Set(ctx, tc.path, []byte("again"), AnyVersion); errors.Is(err, ErrNoNode) {
				_, err = other.Create(ctx, tc.path, nil, 0)
				if err != nil {
					t.Fatal(err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			noEvent(t, s, ch)
		})
	}
}

func testWatchNotWatchingOnSessionEnd(t *testing.T, newTree NewTree) {
	ctx := context.Background()
	s := newTree(t)()
	mustCreate(t, s, "/a", "", 0)
	_, _, ch, err := s.GetW(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	ev := recv(t, ch)
	if ev.Type != EventNotWatching || !errors.Is(ev.Err, ErrSessionExpired) {
		t.Fatalf("event %+v", ev)
	}
}

func testMulti(t *testing.T, newTree NewTree) {
	ctx := context.Background()
	tests := []struct {
		name      string
		ops       []Op
		wantErr   error
		wantExist map[string]bool
		wantData  map[string]string
	}{
		{
			name:      "all applied",
			ops:       []Op{CheckOp{Path: "/a", Version: 0}, CreateOp{Path: "/a/x", Data: []byte("x")}, SetOp{Path: "/b", Data: []byte("b1"), Version: 0}, DeleteOp{Path: "/c", Version: 0}},
			wantExist: map[string]bool{"/a/x": true, "/c": false},
			wantData:  map[string]string{"/b": "b1"},
		},
		{
			name:      "check fails rolls back earlier ops",
			ops:       []Op{CreateOp{Path: "/a/x"}, SetOp{Path: "/b", Data: []byte("b1"), Version: 0}, DeleteOp{Path: "/c", Version: 0}, CheckOp{Path: "/a", Version: 5}},
			wantErr:   ErrBadVersion,
			wantExist: map[string]bool{"/a/x": false, "/c": true},
			wantData:  map[string]string{"/b": "b0"},
		},
		{
			name:      "create then create child in one multi",
			ops:       []Op{CreateOp{Path: "/n"}, CreateOp{Path: "/n/m", Data: []byte("m")}},
			wantExist: map[string]bool{"/n": true, "/n/m": true},
		},
		{
			name:      "missing parent fails all",
			ops:       []Op{CreateOp{Path: "/n"}, CreateOp{Path: "/zz/m"}},
			wantErr:   ErrNoNode,
			wantExist: map[string]bool{"/n": false},
		},
		{
			name:      "delete non-empty fails",
			ops:       []Op{SetOp{Path: "/b", Data: []byte("b1"), Version: AnyVersion}, DeleteOp{Path: "/a", Version: AnyVersion}},
			wantErr:   ErrNotEmpty,
			wantData:  map[string]string{"/b": "b0"},
			wantExist: map[string]bool{"/a": true},
		},
		{
			name:     "second set sees first set's version",
			ops:      []Op{SetOp{Path: "/b", Data: []byte("b1"), Version: 0}, SetOp{Path: "/b", Data: []byte("b2"), Version: 1}},
			wantData: map[string]string{"/b": "b2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			open := newTree(t)
			s := open()
			mustCreate(t, s, "/a", "", 0)
			mustCreate(t, s, "/a/keep", "", 0)
			mustCreate(t, s, "/b", "b0", 0)
			mustCreate(t, s, "/c", "", 0)
			_, before, _ := s.Exists(ctx, "/b")
			_, _, bw, _ := s.GetW(ctx, "/b")
			err := open().Multi(ctx, tc.ops...)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			for p, want := range tc.wantExist {
				if ok, _, _ := s.Exists(ctx, p); ok != want {
					t.Errorf("%s exists = %v, want %v", p, ok, want)
				}
			}
			for p, want := range tc.wantData {
				if d, _, _ := s.Get(ctx, p); string(d) != want {
					t.Errorf("%s = %q, want %q", p, d, want)
				}
			}
			if tc.wantErr != nil {
				_, after, _ := s.Exists(ctx, "/b")
				if after != before {
					t.Errorf("stat changed by failed multi: %+v -> %+v", before, after)
				}
				noEvent(t, s, bw)
			}
		})
	}
}

func testEnsurePathAndCreateRecursive(t *testing.T, newTree NewTree) {
	ctx := context.Background()
	s := newTree(t)()
	if err := EnsurePath(ctx, s, "/a/b/c"); err != nil {
		t.Fatal(err)
	}
	if err := EnsurePath(ctx, s, "/a/b/c"); err != nil {
		t.Fatalf("second ensure: %v", err)
	}
	p, err := CreateRecursive(ctx, s, "/x/y/z", []byte("d"), 0)
	if err != nil || p != "/x/y/z" {
		t.Fatalf("%s %v", p, err)
	}
	if _, err := CreateRecursive(ctx, s, "/x/y/z", nil, 0); !errors.Is(err, ErrNodeExists) {
		t.Fatalf("recreate: %v", err)
	}
}

// Concurrent creators of the same node: exactly one wins, as with ZooKeeper.
func testConcurrentCreateOneWins(t *testing.T, newTree NewTree) {
	ctx := context.Background()
	open := newTree(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := open().Create(ctx, "/controller", nil, Ephemeral); err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errors.Is(err, ErrNodeExists) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d winners", wins)
	}
}
