package zkstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/brook-mq/brook/controller/store"
)

// transient reports a lost connection (not a lost session): go-zookeeper
// reconnects by itself and the session survives if it comes back in time.
// go-zookeeper also hands a request the raw socket error when the write
// fails on a broken connection.
func transient(err error) bool {
	var opErr *net.OpError
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.As(err, &opErr)
}

// Backoffs between retries of a request that met a lost connection.
const (
	minRetryBackoff = 20 * time.Millisecond
	maxRetryBackoff = time.Second
)

// retry runs f until it gets an answer that is not a lost connection, as
// Kafka's ZooKeeperClient resends requests on CONNECTIONLOSS. A write that
// reached the server before the connection broke is sent again, so callers
// see the same ambiguity as Kafka's (NodeExists after a create that took
// effect, BadVersion after a set that did).
func (s *Store) retry(ctx context.Context, f func() error) error {
	backoff := minRetryBackoff
	for {
		err := f()
		if err == nil || !transient(err) {
			return err
		}
		if s.expired.Load() {
			return fmt.Errorf("%w (%v)", store.ErrSessionExpired, err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (after %v)", ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(2*backoff, maxRetryBackoff)
		if err := s.check(ctx); err != nil {
			return err
		}
	}
}

func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("%w (%v)", store.ErrNoNode, err)
	case errors.Is(err, zk.ErrNodeExists):
		return fmt.Errorf("%w (%v)", store.ErrNodeExists, err)
	case errors.Is(err, zk.ErrBadVersion):
		return fmt.Errorf("%w (%v)", store.ErrBadVersion, err)
	case errors.Is(err, zk.ErrNotEmpty):
		return fmt.Errorf("%w (%v)", store.ErrNotEmpty, err)
	case errors.Is(err, zk.ErrNoChildrenForEphemerals):
		return fmt.Errorf("%w (%v)", store.ErrNoChildrenForEphemerals, err)
	case errors.Is(err, zk.ErrSessionExpired), errors.Is(err, zk.ErrClosing), errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer):
		return fmt.Errorf("%w (%v)", store.ErrSessionExpired, err)
	case errors.Is(err, zk.ErrInvalidPath), errors.Is(err, zk.ErrBadArguments):
		return fmt.Errorf("%w (%v)", store.ErrInvalidPath, err)
	}
	return fmt.Errorf("zookeeper: %w", err)
}

func (s *Store) op(path string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", path, mapErr(err))
}
