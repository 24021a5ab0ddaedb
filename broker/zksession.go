package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/controller/zkstore"
)

// zkSession is the broker's ZooKeeper connection as one store.Store that
// outlives session expiry. A ZooKeeper session that expires stays expired
// (its ephemeral nodes, the broker registration and maybe /controller, are
// gone); the next operation that finds it so opens a new session, lets the
// broker register again (renewed), and retries once, so that the
// controller and the watchers carry on over the new session, as Kafka's
// ZooKeeper client re-initialises after expiry.
type zkSession struct {
	opts    zkstore.Options
	logger  *slog.Logger
	renewed func(ctx context.Context, st store.Store) error

	cur atomic.Pointer[zkstore.Store]
	mu  sync.Mutex // one renewal at a time
}

var _ store.Store = (*zkSession)(nil)

func dialZKSession(ctx context.Context, opts zkstore.Options, logger *slog.Logger) (*zkSession, error) {
	st, err := zkstore.Dial(ctx, opts)
	if err != nil {
		return nil, err
	}
	s := &zkSession{opts: opts, logger: logger}
	s.cur.Store(st)
	return s, nil
}

// renew replaces the expired session old with a new one, unless another
// caller already did.
func (s *zkSession) renew(ctx context.Context, old *zkstore.Store) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.Load() != old {
		return nil
	}
	s.logger.Warn("zookeeper session expired; opening a new one")
	st, err := zkstore.Dial(ctx, s.opts)
	if err != nil {
		return fmt.Errorf("renew zookeeper session: %w", err)
	}
	old.Close()
	s.cur.Store(st)
	if s.renewed != nil {
		// The new session itself, not s: a second expiry during the
		// callback must fail it rather than renew under mu again.
		if err := s.renewed(ctx, st); err != nil {
			return fmt.Errorf("after renewing the zookeeper session: %w", err)
		}
	}
	return nil
}

// do runs op on the current session, and once more on a new one if the
// current one has expired.
func (s *zkSession) do(ctx context.Context, op func(st *zkstore.Store) error) error {
	st := s.cur.Load()
	err := op(st)
	if !errors.Is(err, store.ErrSessionExpired) {
		return err
	}
	if rerr := s.renew(ctx, st); rerr != nil {
		return errors.Join(err, rerr)
	}
	return op(s.cur.Load())
}

func (s *zkSession) Create(ctx context.Context, path string, data []byte, flags store.CreateFlags) (name string, err error) {
	err = s.do(ctx, func(st *zkstore.Store) error { name, err = st.Create(ctx, path, data, flags); return err })
	return name, err
}

func (s *zkSession) Get(ctx context.Context, path string) (data []byte, stat store.Stat, err error) {
	err = s.do(ctx, func(st *zkstore.Store) error { data, stat, err = st.Get(ctx, path); return err })
	return data, stat, err
}

func (s *zkSession) GetW(ctx context.Context, path string) (data []byte, stat store.Stat, ch <-chan store.Event, err error) {
	err = s.do(ctx, func(st *zkstore.Store) error { data, stat, ch, err = st.GetW(ctx, path); return err })
	return data, stat, ch, err
}

func (s *zkSession) Exists(ctx context.Context, path string) (ok bool, stat store.Stat, err error) {
	err = s.do(ctx, func(st *zkstore.Store) error { ok, stat, err = st.Exists(ctx, path); return err })
	return ok, stat, err
}

func (s *zkSession) ExistsW(ctx context.Context, path string) (ok bool, stat store.Stat, ch <-chan store.Event, err error) {
	err = s.do(ctx, func(st *zkstore.Store) error { ok, stat, ch, err = st.ExistsW(ctx, path); return err })
	return ok, stat, ch, err
}

func (s *zkSession) Children(ctx context.Context, path string) (names []string, stat store.Stat, err error) {
	err = s.do(ctx, func(st *zkstore.Store) error { names, stat, err = st.Children(ctx, path); return err })
	return names, stat, err
}

func (s *zkSession) ChildrenW(ctx context.Context, path string) (names []string, stat store.Stat, ch <-chan store.Event, err error) {
	err = s.do(ctx, func(st *zkstore.Store) error { names, stat, ch, err = st.ChildrenW(ctx, path); return err })
	return names, stat, ch, err
}

func (s *zkSession) Set(ctx context.Context, path string, data []byte, version int32) (stat store.Stat, err error) {
	err = s.do(ctx, func(st *zkstore.Store) error { stat, err = st.Set(ctx, path, data, version); return err })
	return stat, err
}

func (s *zkSession) Delete(ctx context.Context, path string, version int32) error {
	return s.do(ctx, func(st *zkstore.Store) error { return st.Delete(ctx, path, version) })
}

func (s *zkSession) Multi(ctx context.Context, ops ...store.Op) error {
	return s.do(ctx, func(st *zkstore.Store) error { return st.Multi(ctx, ops...) })
}

func (s *zkSession) SessionID() int64 { return s.cur.Load().SessionID() }

func (s *zkSession) Close() error { return s.cur.Load().Close() }
