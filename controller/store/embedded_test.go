package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
)

func newSession(t *testing.T, dir string) (*DB, *Session) {
	t.Helper()
	db, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, db.NewSession()
}

func mustCreate(t *testing.T, s Store, path, data string, flags CreateFlags) string {
	t.Helper()
	p, err := s.Create(context.Background(), path, []byte(data), flags)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return p
}

// recv waits for one event with a deadline (not a sleep: it returns as soon as the event arrives).
func recv(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev := <-ch:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no watch event")
		return Event{}
	}
}

func noEvent(t *testing.T, ch <-chan Event) {
	t.Helper()
	select {
	case ev := <-ch:
		t.Fatalf("unexpected event %+v", ev)
	default:
	}
}

func TestCreateSemantics(t *testing.T) {
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
		{name: "sequential counts parent child version", setup: []string{"/q", "/q/x", "/q/y"}, path: "/q/n_", flags: Sequential, want: "/q/n_0000000002"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, s := newSession(t, "")
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

func TestSequentialAfterDelete(t *testing.T) {
	ctx := context.Background()
	_, s := newSession(t, "")
	mustCreate(t, s, "/q", "", 0)
	p0 := mustCreate(t, s, "/q/n_", "", Sequential)
	if err := s.Delete(ctx, p0, AnyVersion); err != nil {
		t.Fatal(err)
	}
	// ZooKeeper never reuses a sequence number: the delete bumped the child version too.
	if p := mustCreate(t, s, "/q/n_", "", Sequential); p != "/q/n_0000000002" {
		t.Fatalf("got %s", p)
	}
}

func TestVersionsAndStat(t *testing.T) {
	ctx := context.Background()
	_, s := newSession(t, "")
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

func TestDeleteSemantics(t *testing.T) {
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
			_, s := newSession(t, "")
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

func TestChildrenSorted(t *testing.T) {
	ctx := context.Background()
	_, s := newSession(t, "")
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

func TestEphemerals(t *testing.T) {
	ctx := context.Background()
	db, s1 := newSession(t, "")
	s2 := db.NewSession()
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

func TestWatches(t *testing.T) {
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
			db, s := newSession(t, "")
			other := db.NewSession()
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
				noEvent(t, ch)
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
			noEvent(t, ch)
		})
	}
}

func TestWatchNotWatchingOnSessionEnd(t *testing.T) {
	ctx := context.Background()
	_, s := newSession(t, "")
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

func TestMulti(t *testing.T) {
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
			ops:       []Op{CheckOp{"/a", 0}, CreateOp{Path: "/a/x", Data: []byte("x")}, SetOp{"/b", []byte("b1"), 0}, DeleteOp{"/c", 0}},
			wantExist: map[string]bool{"/a/x": true, "/c": false},
			wantData:  map[string]string{"/b": "b1"},
		},
		{
			name:      "check fails rolls back earlier ops",
			ops:       []Op{CreateOp{Path: "/a/x"}, SetOp{"/b", []byte("b1"), 0}, DeleteOp{"/c", 0}, CheckOp{"/a", 5}},
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
			ops:       []Op{SetOp{"/b", []byte("b1"), AnyVersion}, DeleteOp{"/a", AnyVersion}},
			wantErr:   ErrNotEmpty,
			wantData:  map[string]string{"/b": "b0"},
			wantExist: map[string]bool{"/a": true},
		},
		{
			name:     "second set sees first set's version",
			ops:      []Op{SetOp{"/b", []byte("b1"), 0}, SetOp{"/b", []byte("b2"), 1}},
			wantData: map[string]string{"/b": "b2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db, s := newSession(t, "")
			mustCreate(t, s, "/a", "", 0)
			mustCreate(t, s, "/a/keep", "", 0)
			mustCreate(t, s, "/b", "b0", 0)
			mustCreate(t, s, "/c", "", 0)
			_, before, _ := s.Exists(ctx, "/b")
			_, _, bw, _ := s.GetW(ctx, "/b")
			err := db.NewSession().Multi(ctx, tc.ops...)
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
				noEvent(t, bw)
			}
		})
	}
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

func TestEnsurePathAndCreateRecursive(t *testing.T) {
	ctx := context.Background()
	_, s := newSession(t, "")
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
func TestConcurrentCreateOneWins(t *testing.T) {
	ctx := context.Background()
	db, _ := newSession(t, "")
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := db.NewSession().Create(ctx, "/controller", nil, Ephemeral); err == nil {
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
