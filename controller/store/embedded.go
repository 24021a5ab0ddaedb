package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Options configures an embedded DB.
type Options struct {
	// Dir is where persistent nodes are saved; empty keeps everything in memory.
	Dir    string
	Logger *slog.Logger
	Now    func() time.Time
}

// DB is an embedded, single-process metadata tree with ZooKeeper semantics.
// Clients use it through sessions (NewSession), each of which is a Store.
// Persistent nodes are rewritten atomically to Dir after every change;
// ephemeral nodes live only as long as their session and never survive a
// restart.
type DB struct {
	opts Options
	file string

	mu           sync.Mutex // guards everything below; never held while sending on a watch channel
	t            *tree
	closed       bool
	nextSession  int64
	sessions     map[int64]*Session
	dataWatches  map[string][]*watch // fire on NodeCreated, NodeDataChanged, NodeDeleted
	childWatches map[string][]*watch // fire on NodeChildrenChanged, NodeDeleted
}

type watch struct {
	ch      chan Event // buffered 1: each watch fires exactly once, so sends never block
	session int64
}

type delivery struct {
	w  *watch
	ev Event
}

// Open loads the tree saved in opts.Dir (if any) and returns the DB.
func Open(opts Options) (*DB, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	db := &DB{
		opts:         opts,
		t:            newTree(),
		sessions:     map[int64]*Session{},
		dataWatches:  map[string][]*watch{},
		childWatches: map[string][]*watch{},
	}
	if opts.Dir != "" {
		db.file = metadataFile(opts.Dir)
		t, err := load(db.file)
		if err != nil {
			return nil, err
		}
		if t != nil {
			db.t = t
		}
	}
	return db, nil
}

// NewSession opens a session on the DB.
func (db *DB) NewSession() *Session {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.nextSession++
	s := &Session{db: db, id: db.nextSession}
	if db.closed {
		s.expired = true
	} else {
		db.sessions[s.id] = s
	}
	return s
}

// Expire ends a session as ZooKeeper's session timeout would: its ephemeral
// nodes are deleted, its watches receive EventNotWatching, and its further
// calls fail with ErrSessionExpired.
func (db *DB) Expire(sessionID int64) {
	db.mu.Lock()
	deliveries := db.expireLocked(sessionID)
	db.mu.Unlock()
	deliver(deliveries)
}

// Close expires every session.
func (db *DB) Close() error {
	db.mu.Lock()
	db.closed = true
	var deliveries []delivery
	for id := range db.sessions {
		deliveries = append(deliveries, db.expireLocked(id)...)
	}
	db.mu.Unlock()
	deliver(deliveries)
	return nil
}

func (db *DB) expireLocked(id int64) []delivery {
	s, ok := db.sessions[id]
	if !ok {
		return nil
	}
	delete(db.sessions, id)
	s.expired = true
	var deliveries []delivery
	// Ephemeral deletions are independent: one failing (it cannot, as
	// ephemerals have no children) must not keep the others alive.
	for _, p := range db.t.ephemeralsOf(id) {
		d, err := db.applyLocked(func(t *tree) error { return t.delete(p, AnyVersion) })
		if err != nil {
			db.opts.Logger.Error("delete ephemeral node on session end", "path", p, "session", id, "err", err)
		}
		deliveries = append(deliveries, d...)
	}
	for _, m := range []map[string][]*watch{db.dataWatches, db.childWatches} {
		for p, ws := range m {
			kept := ws[:0]
			for _, w := range ws {
				if w.session == id {
					deliveries = append(deliveries, delivery{w, Event{Type: EventNotWatching, Path: p, Err: ErrSessionExpired}})
				} else {
					kept = append(kept, w)
				}
			}
			if len(kept) == 0 {
				delete(m, p)
			} else {
				m[p] = kept
			}
		}
	}
	return deliveries
}

// applyLocked runs fn as one transaction: on error everything fn did is
// undone; on success the file is saved (if a persistent node changed) and
// the watches fn triggered are returned for delivery after unlock.
func (db *DB) applyLocked(fn func(t *tree) error) ([]delivery, error) {
	db.t.begin()
	if err := fn(db.t); err != nil {
		db.t.rollback()
		return nil, err
	}
	if db.file != "" && db.t.persistDirty {
		if err := save(db.file, db.t); err != nil {
			// The change is not durable, so it must not be visible either.
			db.t.rollback()
			return nil, err
		}
	}
	var out []delivery
	for _, tr := range db.t.triggers {
		out = append(out, db.fireLocked(tr)...)
	}
	return out, nil
}

func (db *DB) fireLocked(tr trigger) []delivery {
	var out []delivery
	take := func(m map[string][]*watch) {
		for _, w := range m[tr.path] {
			out = append(out, delivery{w, Event{Type: tr.typ, Path: tr.path}})
		}
		delete(m, tr.path)
	}
	switch tr.typ {
	case EventNodeCreated, EventNodeDataChanged:
		take(db.dataWatches)
	case EventNodeDeleted:
		take(db.dataWatches)
		take(db.childWatches)
	case EventNodeChildrenChanged:
		take(db.childWatches)
	}
	return out
}

func deliver(ds []delivery) {
	for _, d := range ds {
		d.w.ch <- d.ev
	}
}

func (db *DB) nowMs() int64 { return db.opts.Now().UnixMilli() }

// Session is one client session on a DB; it implements Store.
type Session struct {
	db      *DB
	id      int64
	expired bool // guarded by db.mu
}

var _ Store = (*Session)(nil)

// begin locks the DB and checks the session and context; callers must unlock.
func (s *Session) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.db.mu.Lock()
	if s.expired {
		s.db.mu.Unlock()
		return ErrSessionExpired
	}
	return nil
}

// SessionID returns the session's id, the owner of its ephemeral nodes.
func (s *Session) SessionID() int64 { return s.id }

// Close ends the session.
func (s *Session) Close() error {
	s.db.Expire(s.id)
	return nil
}

// Create implements Store.
func (s *Session) Create(ctx context.Context, path string, data []byte, flags CreateFlags) (string, error) {
	if err := s.begin(ctx); err != nil {
		return "", err
	}
	var created string
	ds, err := s.db.applyLocked(func(t *tree) error {
		var err error
		created, err = t.create(path, data, flags, s.id, s.db.nowMs())
		return err
	})
	s.db.mu.Unlock()
	deliver(ds)
	if err != nil {
		return "", err
	}
	return created, nil
}

// Get implements Store.
func (s *Session) Get(ctx context.Context, path string) ([]byte, Stat, error) {
	data, st, _, err := s.get(ctx, path, false)
	return data, st, err
}

// GetW implements Store.
func (s *Session) GetW(ctx context.Context, path string) ([]byte, Stat, <-chan Event, error) {
	return s.get(ctx, path, true)
}

func (s *Session) get(ctx context.Context, path string, watchIt bool) (data []byte, st Stat, ch <-chan Event, err error) {
	st, ch, err = s.read(ctx, path, watchIt, s.db.dataWatches, func(n *node) { data = append([]byte(nil), n.data...) })
	return data, st, ch, err
}

// read looks an existing node up under the store's lock, lets take copy out
// what the caller needs while the lock is held, and, when watchIt, leaves
// a watch in watches: Get and Children differ only in those two.
func (s *Session) read(ctx context.Context, path string, watchIt bool, watches map[string][]*watch, take func(*node)) (Stat, <-chan Event, error) {
	if err := s.begin(ctx); err != nil {
		return Stat{}, nil, err
	}
	defer s.db.mu.Unlock()
	n, err := s.db.t.get(path)
	if err != nil {
		return Stat{}, nil, err
	}
	var ch <-chan Event
	if watchIt {
		ch = s.addWatchLocked(watches, path)
	}
	take(n)
	return s.db.t.stat(n), ch, nil
}

// Exists implements Store.
func (s *Session) Exists(ctx context.Context, path string) (bool, Stat, error) {
	ok, st, _, err := s.exists(ctx, path, false)
	return ok, st, err
}

// ExistsW implements Store.
func (s *Session) ExistsW(ctx context.Context, path string) (bool, Stat, <-chan Event, error) {
	return s.exists(ctx, path, true)
}

func (s *Session) exists(ctx context.Context, path string, watchIt bool) (bool, Stat, <-chan Event, error) {
	if err := ValidatePath(path); err != nil {
		return false, Stat{}, nil, err
	}
	if err := s.begin(ctx); err != nil {
		return false, Stat{}, nil, err
	}
	defer s.db.mu.Unlock()
	var ch <-chan Event
	if watchIt {
		ch = s.addWatchLocked(s.db.dataWatches, path)
	}
	n, ok := s.db.t.nodes[path]
	if !ok {
		return false, Stat{}, ch, nil
	}
	return true, s.db.t.stat(n), ch, nil
}

// Children implements Store.
func (s *Session) Children(ctx context.Context, path string) ([]string, Stat, error) {
	c, st, _, err := s.children(ctx, path, false)
	return c, st, err
}

// ChildrenW implements Store.
func (s *Session) ChildrenW(ctx context.Context, path string) ([]string, Stat, <-chan Event, error) {
	return s.children(ctx, path, true)
}

func (s *Session) children(ctx context.Context, path string, watchIt bool) (names []string, st Stat, ch <-chan Event, err error) {
	st, ch, err = s.read(ctx, path, watchIt, s.db.childWatches, func(n *node) { names = s.db.t.sortedChildren(n) })
	return names, st, ch, err
}

func (s *Session) addWatchLocked(m map[string][]*watch, path string) <-chan Event {
	w := &watch{ch: make(chan Event, 1), session: s.id}
	m[path] = append(m[path], w)
	return w.ch
}

// Set implements Store.
func (s *Session) Set(ctx context.Context, path string, data []byte, version int32) (Stat, error) {
	if err := s.begin(ctx); err != nil {
		return Stat{}, err
	}
	var st Stat
	ds, err := s.db.applyLocked(func(t *tree) error {
		var err error
		st, err = t.set(path, data, version, s.db.nowMs())
		return err
	})
	s.db.mu.Unlock()
	deliver(ds)
	return st, err
}

// Delete implements Store.
func (s *Session) Delete(ctx context.Context, path string, version int32) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	ds, err := s.db.applyLocked(func(t *tree) error { return t.delete(path, version) })
	s.db.mu.Unlock()
	deliver(ds)
	return err
}

// Multi implements Store.
func (s *Session) Multi(ctx context.Context, ops ...Op) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	ds, err := s.db.applyLocked(func(t *tree) error {
		now := s.db.nowMs()
		for i, op := range ops {
			var err error
			switch o := op.(type) {
			case CheckOp:
				err = t.check(o.Path, o.Version)
			case CreateOp:
				_, err = t.create(o.Path, o.Data, o.Flags, s.id, now)
			case SetOp:
				_, err = t.set(o.Path, o.Data, o.Version, now)
			case DeleteOp:
				err = t.delete(o.Path, o.Version)
			default:
				err = fmt.Errorf("store: unknown op type %T", op)
			}
			if err != nil {
				return fmt.Errorf("multi op %d (%T %s): %w", i, op, op.opPath(), err)
			}
		}
		return nil
	})
	s.db.mu.Unlock()
	deliver(ds)
	return err
}
