package quota

import (
	"math"
	"sync"
	"time"
)

// ConnectionCreationRate is the quota key of an IP entity (KIP-612):
// new connections per second from one address.
const ConnectionCreationRate = "connection_creation_rate"

// UnlimitedConnectionRate is Kafka's default connection creation rate,
// Int.MaxValue: no limit, and nothing recorded for an IP without one.
const UnlimitedConnectionRate = math.MaxInt32

// ConnectionRates is the rate half of Kafka's ConnectionQuotas: new
// connections measured, over quota.window.num samples of
// quota.window.size.seconds, broker-wide and per listener against
// max.connection.creation.rate, and per IP against the ip entity's
// connection_creation_rate. Past the broker or listener rate the acceptor
// waits; past an IP's the connection is refused and not counted at all.
// The throttle is at most one sample window, as Kafka bounds it.
type ConnectionRates struct {
	window Window
	maxIPs int

	mu        sync.Mutex
	broker    *Rate
	listeners map[string]*Rate
	ips       map[string]*ipRate
}

type ipRate struct {
	rate *Rate
	last time.Time
}

// NewConnectionRates measures over w; maxIPs bounds the IPs measured
// (below 1: DefaultMaxRates), since addresses are the clients' choice.
func NewConnectionRates(w Window, maxIPs int) *ConnectionRates {
	if maxIPs < 1 {
		maxIPs = DefaultMaxRates
	}
	w = w.normal()
	return &ConnectionRates{window: w, maxIPs: maxIPs, broker: NewRate(w), listeners: map[string]*Rate{}, ips: map[string]*ipRate{}}
}

// recordLocked adds v to r and returns the bounded throttle against
// limit, as Kafka's recordAndGetThrottleTimeMs.
func (c *ConnectionRates) recordLocked(r *Rate, v, limit float64, nowMs int64) time.Duration {
	r.Record(v, nowMs)
	observed := r.Measure(nowMs)
	if observed <= limit {
		return 0
	}
	return min(ThrottleTime(observed, limit, r.WindowMs(nowMs)), c.window.Size)
}

func (c *ConnectionRates) listenerLocked(name string) *Rate {
	r, ok := c.listeners[name]
	if !ok {
		r = NewRate(c.window)
		c.listeners[name] = r
	}
	return r
}

// Accept records a new connection on listener and returns how long the
// acceptor waits before taking it: the longer of the broker-wide and the
// listener's throttle. A protected listener (the inter-broker one, when
// there are several) counts only against its own rate.
func (c *ConnectionRates) Accept(listener string, protected bool, brokerLimit, listenerLimit float64, nowMs int64) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var d time.Duration
	if !protected {
		d = c.recordLocked(c.broker, 1, brokerLimit, nowMs)
	}
	return max(d, c.recordLocked(c.listenerLocked(listener), 1, listenerLimit, nowMs))
}

// AcceptIP records a new connection from ip against its
// connection_creation_rate limit. Over it, the connection is taken back
// out of the IP's, the listener's and the broker's rates, since it is
// refused, and the throttle is returned: the caller closes the
// connection once it has passed. An unlimited IP is not measured.
func (c *ConnectionRates) AcceptIP(listener string, protected bool, ip string, limit float64, nowMs int64) time.Duration {
	if limit >= UnlimitedConnectionRate {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.ipLocked(ip, nowMs)
	d := c.recordLocked(e.rate, 1, limit, nowMs)
	if d == 0 {
		return 0
	}
	e.rate.Record(-1, nowMs)
	if !protected {
		c.broker.Record(-1, nowMs)
	}
	c.listenerLocked(listener).Record(-1, nowMs)
	return d
}

// ipLocked is ip's rate; a new one first makes room (makeRoom), as
// Kafka's IP sensors expire.
func (c *ConnectionRates) ipLocked(ip string, nowMs int64) *ipRate {
	now := time.UnixMilli(nowMs)
	if e, ok := c.ips[ip]; ok {
		e.last = now
		return e
	}
	makeRoom(c.ips, func(e *ipRate) time.Time { return e.last }, now, c.maxIPs)
	e := &ipRate{rate: NewRate(c.window), last: now}
	c.ips[ip] = e
	return e
}

// IPs is how many IP rates are kept.
func (c *ConnectionRates) IPs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ips)
}

// IPLimit is the connection_creation_rate of ip in t: its own entity's,
// else the <default> ip entity's, else unlimited.
func (t Table) IPLimit(ip string) float64 {
	if v, ok := t[Entity{IP: Named(ip)}][ConnectionCreationRate]; ok {
		return v
	}
	if v, ok := t[Entity{IP: DefaultName}][ConnectionCreationRate]; ok {
		return v
	}
	return UnlimitedConnectionRate
}
