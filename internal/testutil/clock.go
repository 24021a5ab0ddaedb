package testutil

import (
	"slices"
	"sync"
	"time"
)

// Clock is an injectable clock that tests move by hand, for the pure cores
// (log, group, replica) that take time as a Now function, and for their
// drivers' timers (After).
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	timers []clockTimer
}

type clockTimer struct {
	at time.Time
	ch chan time.Time
}

// NewClock returns a clock standing at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time; pass c.Now where a func() time.Time is wanted.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and fires the timers it reaches.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.timers = slices.DeleteFunc(c.timers, func(t clockTimer) bool {
		if t.at.After(c.now) {
			return false
		}
		t.ch <- c.now
		return true
	})
}

// After is time.After on this clock: the channel receives the clock's time
// once Advance has moved it d past now (at once for d <= 0).
func (c *Clock) After(d time.Duration) <-chan time.Time {
	ch, _ := c.Timer(d)
	return ch
}

// Timer is After with a stop func, which drops the timer if it has not
// fired, as time.Timer.Stop does.
func (c *Clock) Timer(d time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch, func() {}
	}
	c.timers = append(c.timers, clockTimer{at: c.now.Add(d), ch: ch})
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.timers = slices.DeleteFunc(c.timers, func(t clockTimer) bool { return t.ch == ch })
	}
}

// Timers lists when the pending timers fire, earliest first, so that a
// test can see what a driver scheduled.
func (c *Clock) Timers() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Time, len(c.timers))
	for i, t := range c.timers {
		out[i] = t.at
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}
