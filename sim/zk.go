package sim

import (
	"context"
	"errors"
	"time"

	"github.com/brook-mq/brook/controller/store"
)

// ErrConnectionLoss is what a call on a disconnected session gets, as
// ZooKeeper's CONNECTIONLOSS: the session may still be alive on the server.
var ErrConnectionLoss = errors.New("sim: zookeeper connection loss")

// ZK is the simulated ZooKeeper. The tree and its semantics (versions,
// ephemeral and sequential nodes, one-shot watches, multi) are the
// embedded store's, on the virtual clock; what ZK adds is ZooKeeper's
// session life: a client cut off from the server for its session timeout
// loses its session, its ephemeral nodes and its watches.
type ZK struct {
	sched *Scheduler
	db    *store.DB
	// writes counts the calls that may change the tree, so that a reader
	// can keep what it decoded until the next (invariants.storedState).
	writes uint64
	// afterWrite, if set, runs after each call that may have changed the
	// tree: a check of what is stored sees every write, also when one
	// event (a controller's step) makes several.
	afterWrite func()
}

func (z *ZK) wrote() {
	if z.afterWrite != nil {
		z.afterWrite()
	}
}

// NewZK starts an empty ensemble on the scheduler's clock.
func NewZK(s *Scheduler) *ZK {
	db, err := store.Open(store.Options{Now: s.Now})
	if err != nil {
		panic(err) // in memory: cannot fail
	}
	return &ZK{sched: s, db: db}
}

// Connect opens a session with the given timeout.
func (z *ZK) Connect(timeout time.Duration) *ZKSession {
	return &ZKSession{Session: z.db.NewSession(), zk: z, timeout: timeout, connected: true}
}

// ZKSession is a client's session; it implements store.Store.
type ZKSession struct {
	*store.Session
	zk        *ZK
	timeout   time.Duration
	connected bool
	expired   bool
	// cut counts disconnections, so that an expiry scheduled for one
	// disconnection does nothing after a reconnect.
	cut int
}

var _ store.Store = (*ZKSession)(nil)

// SetConnected connects or disconnects the client. A disconnected session
// expires on the server after its timeout unless the client is back first.
func (s *ZKSession) SetConnected(ok bool) {
	if s.expired || s.connected == ok {
		return
	}
	s.connected = ok
	if ok {
		return
	}
	s.cut++
	cut := s.cut
	s.zk.sched.After(s.timeout, "zk: session timeout", func() {
		if !s.connected && s.cut == cut {
			s.Expire()
		}
	})
}

// Expire ends the session at once, as the server's session tracker does.
func (s *ZKSession) Expire() {
	if s.expired {
		return
	}
	s.expired = true
	s.zk.writes++
	s.zk.sched.Tracef("zk: session %d expired", s.SessionID())
	s.zk.db.Expire(s.SessionID())
}

// Expired reports whether the session has ended.
func (s *ZKSession) Expired() bool { return s.expired }

// Connected reports whether the client reaches the server.
func (s *ZKSession) Connected() bool { return s.connected }

func (s *ZKSession) check() error {
	switch {
	case s.expired:
		return store.ErrSessionExpired
	case !s.connected:
		return ErrConnectionLoss
	}
	return nil
}

func (s *ZKSession) Create(ctx context.Context, path string, data []byte, flags store.CreateFlags) (string, error) {
	s.zk.writes++
	defer s.zk.wrote()
	if err := s.check(); err != nil {
		return "", err
	}
	return s.Session.Create(ctx, path, data, flags)
}

func (s *ZKSession) Get(ctx context.Context, path string) ([]byte, store.Stat, error) {
	if err := s.check(); err != nil {
		return nil, store.Stat{}, err
	}
	return s.Session.Get(ctx, path)
}

func (s *ZKSession) GetW(ctx context.Context, path string) ([]byte, store.Stat, <-chan store.Event, error) {
	if err := s.check(); err != nil {
		return nil, store.Stat{}, nil, err
	}
	return s.Session.GetW(ctx, path)
}

func (s *ZKSession) Exists(ctx context.Context, path string) (bool, store.Stat, error) {
	if err := s.check(); err != nil {
		return false, store.Stat{}, err
	}
	return s.Session.Exists(ctx, path)
}

func (s *ZKSession) ExistsW(ctx context.Context, path string) (bool, store.Stat, <-chan store.Event, error) {
	if err := s.check(); err != nil {
		return false, store.Stat{}, nil, err
	}
	return s.Session.ExistsW(ctx, path)
}

func (s *ZKSession) Children(ctx context.Context, path string) ([]string, store.Stat, error) {
	if err := s.check(); err != nil {
		return nil, store.Stat{}, err
	}
	return s.Session.Children(ctx, path)
}

func (s *ZKSession) ChildrenW(ctx context.Context, path string) ([]string, store.Stat, <-chan store.Event, error) {
	if err := s.check(); err != nil {
		return nil, store.Stat{}, nil, err
	}
	return s.Session.ChildrenW(ctx, path)
}

func (s *ZKSession) Set(ctx context.Context, path string, data []byte, version int32) (store.Stat, error) {
	s.zk.writes++
	defer s.zk.wrote()
	if err := s.check(); err != nil {
		return store.Stat{}, err
	}
	return s.Session.Set(ctx, path, data, version)
}

func (s *ZKSession) Delete(ctx context.Context, path string, version int32) error {
	s.zk.writes++
	defer s.zk.wrote()
	if err := s.check(); err != nil {
		return err
	}
	return s.Session.Delete(ctx, path, version)
}

func (s *ZKSession) Multi(ctx context.Context, ops ...store.Op) error {
	s.zk.writes++
	defer s.zk.wrote()
	if err := s.check(); err != nil {
		return err
	}
	return s.Session.Multi(ctx, ops...)
}

// Close ends the session as a client's close does.
func (s *ZKSession) Close() error {
	s.expired = true
	s.zk.writes++
	return s.Session.Close()
}
