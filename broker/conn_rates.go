package broker

// Connection creation rates (KIP-612), as Kafka's ConnectionQuotas applies
// them: max.connection.creation.rate broker-wide and per listener delays
// the acceptor (the next connections wait in the listen backlog), by at
// most quota.window.size.seconds; an IP over its connection_creation_rate
// (the ip quota entity, /config/ips/<ip> and /config/ips/<default>) has
// its connection refused, uncounted, and closed once the throttle has
// passed, so that the client does not reconnect at once.

import (
	"context"
	"time"

	"github.com/brook-mq/brook/quota"
)

// connCreation is connQuotas' rate part: the rates, the ip quotas in
// force, and the clock and pause (tests inject both).
type connCreation struct {
	rates *quota.ConnectionRates
	now   func() time.Time
	sleep func(context.Context, time.Duration) bool
	// ips holds the ip entities' quotas (guarded by connQuotas.mu).
	ips quota.Table
}

func newConnCreation(w quota.Window) connCreation {
	return connCreation{rates: quota.NewConnectionRates(w, 0), now: time.Now, sleep: sleepCtx}
}

// waitCreationRate records a new connection on listener and waits out
// its broker-wide and listener throttle; false if ctx ended meanwhile.
func (q *connQuotas) waitCreationRate(ctx context.Context, listener string) bool {
	l := q.limits()
	lr := l.creationRate
	if l.listenerCreationRate != nil {
		lr = l.listenerCreationRate(listener)
	}
	d := q.creation.rates.Accept(listener, listener == q.protected, float64(l.creationRate), float64(lr), q.creation.now().UnixMilli())
	return d <= 0 || q.creation.sleep(ctx, d)
}

// ipThrottleLocked records a connection from ip against its
// connection_creation_rate and returns its throttle if over it.
func (q *connQuotas) ipThrottleLocked(listener, ip string) time.Duration {
	limit := q.creation.ips.IPLimit(ip)
	return q.creation.rates.AcceptIP(listener, listener == q.protected, ip, limit, q.creation.now().UnixMilli())
}

// setIPQuotas installs the ip entities' quotas of t.
func (q *connQuotas) setIPQuotas(t quota.Table) {
	ips := quota.Table{}
	for e, v := range t {
		if e.IP.Set {
			ips[e] = v
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.creation.ips = ips
}

// closeThrottled closes a connection refused for its IP's rate once the
// throttle has passed, or at shutdown.
func (q *connQuotas) closeThrottled(ctx context.Context, close func(), d time.Duration) {
	q.creation.sleep(ctx, d)
	close()
}
