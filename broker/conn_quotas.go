package broker

import (
	"context"
	"sync"
	"time"

	"github.com/brook-mq/brook/quota"
)

// connQuotas counts open connections, broker-wide and per client IP, and
// applies max.connections, max.connections.per.ip and
// max.connections.per.ip.overrides as Kafka's ConnectionQuotas does: at the
// broker-wide limit the acceptor waits for a slot (new connections wait in
// the listen backlog), except on the protected listener, whose connection
// closes the least recently used one of another listener instead; a
// connection over its IP's limit is closed at once. The connection
// creation rates (conn_rates.go) come first, as in Kafka. The limits are
// read on every admission, so dynamic updates apply to the next
// connection; wake lets waiting acceptors see a raised limit.
type connQuotas struct {
	limits func() connLimits
	// protected is the inter-broker listener when the broker has more than
	// one: its connections are let in past max.connections, so that the
	// cluster keeps working when clients use up the slots.
	protected string

	mu    sync.Mutex
	total int
	perIP map[string]int
	// evictable holds the connections on other listeners than the
	// protected one, so that one can make room for an inter-broker
	// connection.
	evictable map[*conn]struct{}
	// changed is closed and replaced when a connection closes or the
	// limits change.
	changed chan struct{}

	creation connCreation
}

type connLimits struct {
	maxConnections int32
	perIP          int32
	overrides      map[string]int32
	// creationRate is max.connection.creation.rate; listenerCreationRate
	// gives a listener's.
	creationRate         int32
	listenerCreationRate func(listener string) int32
}

func newConnQuotas(protected string, window quota.Window, limits func() connLimits) *connQuotas {
	return &connQuotas{limits: limits, protected: protected, perIP: map[string]int{}, evictable: map[*conn]struct{}{}, changed: make(chan struct{}),
		creation: newConnCreation(window)}
}

// admit counts a new connection from ip on listener, first waiting out
// max.connection.creation.rate (conn_rates.go), then for a slot under
// max.connections. It returns false, counting nothing, when ip is at its
// own limit (the caller closes the connection) or ctx ended; and when ip
// is over its connection_creation_rate, with the throttle after which
// the caller closes the connection.
func (q *connQuotas) admit(ctx context.Context, listener, ip string) (bool, time.Duration) {
	if !q.waitCreationRate(ctx, listener) {
		return false, 0
	}
	for {
		l := q.limits()
		q.mu.Lock()
		if listener == q.protected || q.total < int(l.maxConnections) {
			if d := q.ipThrottleLocked(listener, ip); d > 0 {
				q.mu.Unlock()
				return false, d
			}
			limit, ok := l.overrides[ip]
			if !ok {
				limit = l.perIP
			}
			admitted := q.perIP[ip] < int(limit)
			var victim *conn
			if admitted {
				if q.total >= int(l.maxConnections) {
					victim = q.leastRecentlyUsedLocked()
				}
				q.total++
				q.perIP[ip]++
			}
			q.mu.Unlock()
			if victim != nil {
				// As Kafka: an inter-broker connection past the limit
				// closes the least recently used one of another listener.
				victim.logger.Info("closing the least recently used connection for an inter-broker connection past max.connections")
				victim.nc.Close()
			}
			return admitted, 0
		}
		changed := q.changed
		q.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return false, 0
		}
	}
}

// track registers a served connection that may be evicted for the
// protected listener; untrack forgets it.
func (q *connQuotas) track(c *conn) {
	if c.listener == q.protected {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.evictable[c] = struct{}{}
}

func (q *connQuotas) untrack(c *conn) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.evictable, c)
}

// leastRecentlyUsedLocked takes the evictable connection that read a
// request longest ago, nil if none.
func (q *connQuotas) leastRecentlyUsedLocked() *conn {
	var victim *conn
	for c := range q.evictable {
		if victim == nil || c.lastRead.Load() < victim.lastRead.Load() {
			victim = c
		}
	}
	// Closing takes a moment to be counted: the next protected connection
	// picks another.
	delete(q.evictable, victim)
	return victim
}

// release uncounts a closed connection from ip.
func (q *connQuotas) release(ip string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.total--
	if q.perIP[ip]--; q.perIP[ip] <= 0 {
		delete(q.perIP, ip)
	}
	q.wakeLocked()
}

// wake tells waiting acceptors that the limits may have changed.
func (q *connQuotas) wake() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.wakeLocked()
}

func (q *connQuotas) wakeLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// open is the number of connections counted now.
func (q *connQuotas) open() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.total
}
