package broker

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/brook-mq/brook/auth"
)

// Accept errors (EMFILE, ENFILE, ENOBUFS: out of descriptors or memory) are
// retried after a pause that doubles from acceptBackoffMin to
// acceptBackoffMax, as net/http's server does, instead of spinning on a
// listener that cannot accept.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// nextAcceptBackoff is the pause after an accept error that followed a
// pause of prev (0 after a success).
func nextAcceptBackoff(prev time.Duration) time.Duration {
	if prev == 0 {
		return acceptBackoffMin
	}
	return min(2*prev, acceptBackoffMax)
}

// sleepCtx pauses for d, or less if ctx ends first; false if it did.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (b *Broker) acceptLoop(ctx context.Context, l boundListener, conns *sync.WaitGroup) {
	b.acceptLoopWith(ctx, l, conns, sleepCtx)
}

// acceptLoopWith is acceptLoop with the pause injected, for tests.
func (b *Broker) acceptLoopWith(ctx context.Context, l boundListener, conns *sync.WaitGroup, sleep func(context.Context, time.Duration) bool) {
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = nextAcceptBackoff(backoff)
			b.logger.Warn("accept", "listener", l.name, "err", err, "retry_in", backoff)
			if !sleep(ctx, backoff) {
				return
			}
			continue
		}
		backoff = 0
		ip := hostOf(nc.RemoteAddr())
		// Waits here at max.connections: the next connections stay in the
		// listen backlog, as in Kafka.
		admitted, throttled := b.quotas.admit(ctx, l.name, ip)
		if throttled > 0 {
			// As Kafka: the refused connection is closed only once its
			// throttle has passed.
			b.logger.Debug("connection refused: over its address's connection_creation_rate", "listener", l.name, "remote", ip, "throttle", throttled)
			conns.Go(func() { b.quotas.closeThrottled(ctx, func() { nc.Close() }, throttled) })
			continue
		}
		if !admitted {
			if ctx.Err() == nil {
				b.logger.Info("connection refused: too many connections from its address", "listener", l.name, "remote", ip)
			}
			nc.Close()
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		conns.Go(func() {
			defer b.quotas.release(ip)
			principal := auth.Anonymous
			if l.tls != nil {
				// Off the accept loop: a slow or garbage handshake holds
				// only its own connection slot.
				tc, p, err := tlsHandshake(ctx, nc, l.tls)
				if err != nil {
					// Kafka logs a failed handshake at INFO too.
					b.logger.Info("failed authentication", "listener", l.name, "remote", nc.RemoteAddr().String(), "err", err)
					nc.Close()
					return
				}
				nc, principal = tc, p
			}
			b.serveConn(ctx, nc, l.name, principal)
		})
	}
}
