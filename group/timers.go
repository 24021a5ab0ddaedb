package group

import (
	"context"
	"math"
	"time"
)

// Deadlines fire at their time, not at the next poll: Run sleeps on one
// timer of the injected clock until the earliest deadline of all loaded
// groups (or the offsets retention check), fires what is due, and arms the
// timer again. Kafka arms a timer per member and per rebalance (its
// heartbeat and join purgatories); clients such as librdkafka's admin tests
// expect a static member's group to be empty right after its session
// timeout.
//
// A step reports the earliest deadline of the group it touched: Run keeps
// the earliest reported while it computes (reported), and is woken when
// one is earlier than the deadline its timer is armed for (armed). Later
// deadlines, a heartbeat's, cost nothing: the timer fires at the old one
// and Run re-arms it.

// never is the Unix ns of no deadline.
const never = math.MaxInt64

// nextDeadline is the group's earliest pending deadline, zero for none.
// Every deadline it reports is cleared or moved by shard.tick once due,
// so that the timer never fires twice for one.
func (g *group) nextDeadline() time.Time {
	var next time.Time
	earlier := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, t := range g.pending {
		earlier(t)
	}
	for _, m := range g.members {
		earlier(m.heartbeatDeadline)
	}
	if g.state == StatePreparingRebalance {
		earlier(g.joinDeadline)
	}
	earlier(g.syncDeadline)
	return next
}

// nextDeadline is the earliest deadline of the shard's groups.
func (s *shard) nextDeadline() time.Time {
	var next time.Time
	for _, g := range s.groups {
		if t := g.nextDeadline(); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// noteDeadline reports a deadline set by a step; it wakes Run if t is
// earlier than the one its timer is armed for.
func (c *Coordinator) noteDeadline(t time.Time) {
	if t.IsZero() {
		return
	}
	ns := t.UnixNano()
	for {
		cur := c.reported.Load()
		if ns >= cur || c.reported.CompareAndSwap(cur, ns) {
			break
		}
	}
	if ns < c.armed.Load() {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// Run fires deadlines (session expiry, join and sync deadlines, pending
// members, offsets retention) at their time until ctx ends.
func (c *Coordinator) Run(ctx context.Context) {
	lastRetention := c.cfg.Now()
	for {
		// A deadline reported from here on is either seen by tick or
		// read back below; one reported after that sees armed and wakes.
		c.reported.Store(never)
		now := c.cfg.Now()
		expire := now.Sub(lastRetention) >= c.cfg.OffsetsRetentionCheckInterval
		if expire {
			lastRetention = now
		}
		next := lastRetention.Add(c.cfg.OffsetsRetentionCheckInterval).UnixNano()
		if t := c.tick(expire); !t.IsZero() {
			next = min(next, t.UnixNano())
		}
		c.armed.Store(next)
		if r := c.reported.Load(); r < next {
			next = r
			c.armed.Store(next)
		}
		// A deadline tick left due would be a bug; waiting a millisecond
		// keeps it from spinning.
		d := max(time.Unix(0, next).Sub(c.cfg.Now()), time.Millisecond)
		timer, stop := c.cfg.NewTimer(d)
		select {
		case <-ctx.Done():
			stop()
			return
		case <-timer:
		case <-c.wake:
		}
		stop()
	}
}

// Tick fires the deadlines due at the clock's now and returns the earliest
// left, zero for none: one round of Run for a driver without Run's
// goroutine and timer (the simulation), which calls it when the returned
// deadline has come. Offsets retention is left to Run.
func (c *Coordinator) Tick() time.Time { return c.tick(false) }

// tick advances every loaded shard to the clock's now and returns the
// earliest deadline left, zero for none.
func (c *Coordinator) tick(expireOffsets bool) time.Time {
	c.mu.Lock()
	parts := make([]*partitionState, 0, len(c.parts))
	for _, ps := range c.parts {
		parts = append(parts, ps)
	}
	c.mu.Unlock()
	var next time.Time
	for _, ps := range parts {
		var eff effects
		ps.mu.Lock()
		if !ps.closed && !ps.loading {
			now := c.cfg.Now()
			ps.sh.tickAll(now, &eff)
			if expireOffsets {
				ps.sh.expireOffsets(now, &eff)
			}
			c.enqueueLocked(ps, &eff)
			if t := ps.sh.nextDeadline(); !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
		ps.mu.Unlock()
		eff.deliver()
	}
	return next
}
