// Package zkstore implements store.Store on a ZooKeeper ensemble with
// go-zookeeper/zk, for Brook clusters. It adds what that client lacks:
// chroot paths (host:2181/brook), sorted children, and a session that stays
// expired once ZooKeeper expires it (go-zookeeper would silently open a new
// session, losing ephemeral nodes behind the caller's back; Brook, like
// Kafka, re-registers with a new Store instead).
package zkstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/brook-mq/brook/controller/store"
)

// Options configures a connection.
type Options struct {
	// Connect is zookeeper.connect: "host1:2181,host2:2181/optional/chroot".
	Connect string
	// SessionTimeout is zookeeper.session.timeout.ms (Kafka's default 18 s).
	SessionTimeout time.Duration
	// ConnectTimeout bounds the wait for the first session
	// (zookeeper.connection.timeout.ms, defaulting to the session timeout).
	ConnectTimeout time.Duration
	Logger         *slog.Logger
	// Dialer replaces net.DialTimeout; tests use it to cut the network.
	Dialer zk.Dialer
}

// Store is one ZooKeeper session.
type Store struct {
	conn    *zk.Conn
	chroot  string // "" or "/brook"
	log     *slog.Logger
	expired atomic.Bool
	once    sync.Once
}

var _ store.Store = (*Store)(nil)

// ParseConnect splits zookeeper.connect into servers and chroot, as Kafka
// does: the chroot starts at the first '/'.
func ParseConnect(connect string) (servers []string, chroot string, err error) {
	hosts := connect
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], strings.TrimSuffix(connect[i:], "/")
		if chroot != "" {
			if err := store.ValidatePath(chroot); err != nil {
				return nil, "", fmt.Errorf("zookeeper.connect %q: bad chroot: %w", connect, err)
			}
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			servers = append(servers, h)
		}
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("zookeeper.connect %q: no servers", connect)
	}
	return servers, chroot, nil
}

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Printf(format string, args ...any) { a.l.Debug(fmt.Sprintf(format, args...)) }

// Dial opens a session and waits until it is established; the chroot is
// created if missing (Kafka requires it to exist; creating it saves a step).
func Dial(ctx context.Context, opts Options) (*Store, error) {
	servers, chroot, err := ParseConnect(opts.Connect)
	if err != nil {
		return nil, err
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = 18 * time.Second
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = opts.SessionTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{chroot: chroot, log: opts.Logger.With("component", "zkstore")}
	connected := make(chan struct{}, 1)
	callback := func(ev zk.Event) {
		switch ev.State {
		case zk.StateHasSession:
			select {
			case connected <- struct{}{}:
			default:
			}
		case zk.StateExpired:
			s.expire()
		}
	}
	if opts.Dialer == nil {
		opts.Dialer = net.DialTimeout
	}
	conn, _, err := zk.Connect(servers, opts.SessionTimeout, zk.WithLogger(slogAdapter{s.log}), zk.WithEventCallback(callback), zk.WithDialer(opts.Dialer))
	if err != nil {
		return nil, fmt.Errorf("connect to zookeeper %s: %w", opts.Connect, err)
	}
	s.conn = conn
	timer := time.NewTimer(opts.ConnectTimeout)
	defer timer.Stop()
	select {
	case <-connected:
	case <-timer.C:
		conn.Close()
		return nil, fmt.Errorf("connect to zookeeper %s: no session after %v", opts.Connect, opts.ConnectTimeout)
	case <-ctx.Done():
		conn.Close()
		return nil, ctx.Err()
	}
	if chroot != "" {
		if err := ensureRaw(conn, chroot); err != nil {
			conn.Close()
			return nil, fmt.Errorf("create chroot %s: %w", chroot, err)
		}
	}
	return s, nil
}

// ensureRaw creates path and its ancestors without the chroot prefix.
func ensureRaw(conn *zk.Conn, path string) error {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	cur := ""
	for _, p := range parts {
		cur += "/" + p
		if _, err := conn.Create(cur, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return mapErr(err)
		}
	}
	return nil
}

// expire makes the session permanently expired and closes the connection;
// go-zookeeper tells outstanding watches with EventNotWatching.
func (s *Store) expire() {
	s.expired.Store(true)
	s.once.Do(func() {
		// Close from another goroutine: the callback runs on the client's loop.
		go s.conn.Close()
	})
}

func (s *Store) full(path string) (string, error) {
	if err := store.ValidatePath(path); err != nil {
		return "", err
	}
	if s.chroot == "" {
		return path, nil
	}
	if path == "/" {
		return s.chroot, nil
	}
	return s.chroot + path, nil
}

func (s *Store) strip(path string) string {
	if s.chroot == "" {
		return path
	}
	p := strings.TrimPrefix(path, s.chroot)
	if p == "" {
		return "/"
	}
	return p
}

func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.expired.Load() {
		return store.ErrSessionExpired
	}
	return nil
}

func convStat(st *zk.Stat) store.Stat {
	if st == nil {
		return store.Stat{}
	}
	return store.Stat{
		Czxid: st.Czxid, Mzxid: st.Mzxid, Pzxid: st.Pzxid, Ctime: st.Ctime, Mtime: st.Mtime,
		Version: st.Version, Cversion: st.Cversion, EphemeralOwner: st.EphemeralOwner,
		DataLength: st.DataLength, NumChildren: st.NumChildren,
	}
}

// watch converts one go-zookeeper watch into a store watch.
func (s *Store) watch(zch <-chan zk.Event) <-chan store.Event {
	out := make(chan store.Event, 1)
	go func() {
		ev, ok := <-zch
		if !ok {
			out <- store.Event{Type: store.EventNotWatching, Err: store.ErrSessionExpired}
			return
		}
		se := store.Event{Path: s.strip(ev.Path)}
		switch ev.Type {
		case zk.EventNodeCreated:
			se.Type = store.EventNodeCreated
		case zk.EventNodeDeleted:
			se.Type = store.EventNodeDeleted
		case zk.EventNodeDataChanged:
			se.Type = store.EventNodeDataChanged
		case zk.EventNodeChildrenChanged:
			se.Type = store.EventNodeChildrenChanged
		default:
			se.Type, se.Err = store.EventNotWatching, store.ErrSessionExpired
			if ev.Err != nil && !errors.Is(ev.Err, zk.ErrSessionExpired) && !errors.Is(ev.Err, zk.ErrClosing) {
				se.Err = fmt.Errorf("%w (%v)", store.ErrSessionExpired, ev.Err)
			}
		}
		out <- se
	}()
	return out
}

func zkFlags(f store.CreateFlags) int32 {
	var out int32
	if f&store.Ephemeral != 0 {
		out |= zk.FlagEphemeral
	}
	if f&store.Sequential != 0 {
		out |= zk.FlagSequence
	}
	return out
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, path string, data []byte, flags store.CreateFlags) (string, error) {
	if err := s.check(ctx); err != nil {
		return "", err
	}
	p, err := s.full(path)
	if err != nil {
		return "", err
	}
	if data == nil {
		data = []byte{}
	}
	var created string
	err = s.retry(ctx, func() (err error) {
		created, err = s.conn.Create(p, data, zkFlags(flags), zk.WorldACL(zk.PermAll))
		return err
	})
	if err != nil {
		return "", s.op(path, err)
	}
	return s.strip(created), nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, path string) ([]byte, store.Stat, error) {
	if err := s.check(ctx); err != nil {
		return nil, store.Stat{}, err
	}
	p, err := s.full(path)
	if err != nil {
		return nil, store.Stat{}, err
	}
	var data []byte
	var st *zk.Stat
	err = s.retry(ctx, func() (err error) {
		data, st, err = s.conn.Get(p)
		return err
	})
	return data, convStat(st), s.op(path, err)
}

// GetW implements store.Store.
func (s *Store) GetW(ctx context.Context, path string) ([]byte, store.Stat, <-chan store.Event, error) {
	if err := s.check(ctx); err != nil {
		return nil, store.Stat{}, nil, err
	}
	p, err := s.full(path)
	if err != nil {
		return nil, store.Stat{}, nil, err
	}
	var data []byte
	var st *zk.Stat
	var ch <-chan zk.Event
	err = s.retry(ctx, func() (err error) {
		data, st, ch, err = s.conn.GetW(p)
		return err
	})
	if err != nil {
		return nil, store.Stat{}, nil, s.op(path, err)
	}
	return data, convStat(st), s.watch(ch), nil
}

// Exists implements store.Store.
func (s *Store) Exists(ctx context.Context, path string) (bool, store.Stat, error) {
	if err := s.check(ctx); err != nil {
		return false, store.Stat{}, err
	}
	p, err := s.full(path)
	if err != nil {
		return false, store.Stat{}, err
	}
	var ok bool
	var st *zk.Stat
	err = s.retry(ctx, func() (err error) {
		ok, st, err = s.conn.Exists(p)
		return err
	})
	return ok, convStat(st), s.op(path, err)
}

// ExistsW implements store.Store.
func (s *Store) ExistsW(ctx context.Context, path string) (bool, store.Stat, <-chan store.Event, error) {
	if err := s.check(ctx); err != nil {
		return false, store.Stat{}, nil, err
	}
	p, err := s.full(path)
	if err != nil {
		return false, store.Stat{}, nil, err
	}
	var ok bool
	var st *zk.Stat
	var ch <-chan zk.Event
	err = s.retry(ctx, func() (err error) {
		ok, st, ch, err = s.conn.ExistsW(p)
		return err
	})
	if err != nil {
		return false, store.Stat{}, nil, s.op(path, err)
	}
	return ok, convStat(st), s.watch(ch), nil
}

// Children implements store.Store.
func (s *Store) Children(ctx context.Context, path string) ([]string, store.Stat, error) {
	if err := s.check(ctx); err != nil {
		return nil, store.Stat{}, err
	}
	p, err := s.full(path)
	if err != nil {
		return nil, store.Stat{}, err
	}
	var kids []string
	var st *zk.Stat
	err = s.retry(ctx, func() (err error) {
		kids, st, err = s.conn.Children(p)
		return err
	})
	sort.Strings(kids)
	return kids, convStat(st), s.op(path, err)
}

// ChildrenW implements store.Store.
func (s *Store) ChildrenW(ctx context.Context, path string) ([]string, store.Stat, <-chan store.Event, error) {
	if err := s.check(ctx); err != nil {
		return nil, store.Stat{}, nil, err
	}
	p, err := s.full(path)
	if err != nil {
		return nil, store.Stat{}, nil, err
	}
	var kids []string
	var st *zk.Stat
	var ch <-chan zk.Event
	err = s.retry(ctx, func() (err error) {
		kids, st, ch, err = s.conn.ChildrenW(p)
		return err
	})
	if err != nil {
		return nil, store.Stat{}, nil, s.op(path, err)
	}
	sort.Strings(kids)
	return kids, convStat(st), s.watch(ch), nil
}

// Set implements store.Store.
func (s *Store) Set(ctx context.Context, path string, data []byte, version int32) (store.Stat, error) {
	if err := s.check(ctx); err != nil {
		return store.Stat{}, err
	}
	p, err := s.full(path)
	if err != nil {
		return store.Stat{}, err
	}
	var st *zk.Stat
	err = s.retry(ctx, func() (err error) {
		st, err = s.conn.Set(p, data, version)
		return err
	})
	return convStat(st), s.op(path, err)
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, path string, version int32) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if path == "/" {
		return fmt.Errorf("%w: cannot delete /", store.ErrInvalidPath)
	}
	p, err := s.full(path)
	if err != nil {
		return err
	}
	return s.op(path, s.retry(ctx, func() error { return s.conn.Delete(p, version) }))
}

// runtimeInconsistency is how go-zookeeper prints ZooKeeper's error -2.
const runtimeInconsistency = "unknown error: -2"

// Multi implements store.Store. The error names the first operation that
// failed, wrapping the store sentinel for its ZooKeeper error.
func (s *Store) Multi(ctx context.Context, ops ...store.Op) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	reqs := make([]any, 0, len(ops))
	paths := make([]string, 0, len(ops))
	for _, op := range ops {
		var path string
		switch o := op.(type) {
		case store.CheckOp:
			path = o.Path
		case store.CreateOp:
			path = o.Path
		case store.SetOp:
			path = o.Path
		case store.DeleteOp:
			path = o.Path
		default:
			return fmt.Errorf("zkstore: unknown op type %T", op)
		}
		p, err := s.full(path)
		if err != nil {
			return err
		}
		paths = append(paths, path)
		switch o := op.(type) {
		case store.CheckOp:
			reqs = append(reqs, &zk.CheckVersionRequest{Path: p, Version: o.Version})
		case store.CreateOp:
			data := o.Data
			if data == nil {
				data = []byte{}
			}
			reqs = append(reqs, &zk.CreateRequest{Path: p, Data: data, Acl: zk.WorldACL(zk.PermAll), Flags: zkFlags(o.Flags)})
		case store.SetOp:
			reqs = append(reqs, &zk.SetDataRequest{Path: p, Data: o.Data, Version: o.Version})
		case store.DeleteOp:
			reqs = append(reqs, &zk.DeleteRequest{Path: p, Version: o.Version})
		}
	}
	var resps []zk.MultiResponse
	err := s.retry(ctx, func() (err error) {
		resps, err = s.conn.Multi(reqs...)
		return err
	})
	for i, r := range resps {
		// Operations before the failing one report OK and those after it a
		// runtime inconsistency (code -2, which go-zookeeper has no sentinel
		// for); the failing one carries the real cause.
		if r.Error != nil && r.Error.Error() != runtimeInconsistency {
			return fmt.Errorf("multi op %d (%T %s): %w", i, ops[i], paths[i], mapErr(r.Error))
		}
	}
	if err != nil {
		return fmt.Errorf("multi: %w", mapErr(err))
	}
	return nil
}

// SessionID implements store.Store.
func (s *Store) SessionID() int64 { return s.conn.SessionID() }

// Close ends the session; ZooKeeper deletes its ephemeral nodes at once.
func (s *Store) Close() error {
	s.expired.Store(true)
	s.once.Do(s.conn.Close)
	return nil
}
