package txn

import (
	"errors"
	"slices"
	"time"

	"github.com/brook-mq/brook/internal/hwwait"
)

// AsyncPartition is a Partition whose appends answer through a callback
// instead of blocking, for a driver that runs the coordinator on one
// goroutine (the simulation, sim/). A partition given as one gets no
// goroutine: each Step loads it, sends and completes its markers, and
// appends its next queued record once the previous append answered.
type AsyncPartition interface {
	Partition
	// AppendAsync writes one record batch and calls done with its base
	// offset once it is committed (acks=all), or with an error. done may
	// run inside AppendAsync or from a later call of the driver; never
	// concurrently with a Step.
	AppendAsync(batch []byte, done func(base int64, err error))
}

// AsyncMarkerSender is a MarkerSender whose answers arrive through a
// callback, for the partitions of an AsyncPartition: the driver delivers
// the WriteTxnMarkers requests and calls done with each partition's code
// (a partition missing from the answer is retried), once, also when the
// request is lost (after its timeout, with no code). done may run inside
// WriteMarkersAsync or later; never concurrently with a Step.
type AsyncMarkerSender interface {
	WriteMarkersAsync(job MarkerJob, done func(map[TopicPartition]int16))
}

// markerRun is one prepared transaction's markers under way on an
// AsyncPartition: what runMarkers's goroutine keeps on its stack.
type markerRun struct {
	job       MarkerJob
	remaining []TopicPartition // not written yet
	sending   bool             // a round's answer is awaited
	retryAt   time.Time        // the backoff after a failed round
	// notify receives the completion record's outcome once it is queued.
	notify chan error
	done   bool
}

// Step does one round of what the goroutines of a partition do, for every
// led partition that is an AsyncPartition, in partition order: load it
// once elected (and act on the load once the HW reaches its end), move
// its marker jobs on (send a round, back off, write CompleteCommit or
// CompleteAbort), and append its next queued record when none is in
// flight. Its markers go through Config.Markers, which must be
// an AsyncMarkerSender. The production driver is the goroutines of
// runPartition and runMarkers over the same steps.
func (c *Coordinator) Step() {
	for _, ps := range c.partitions() {
		if ps.async {
			c.stepAsync(ps)
		}
	}
}

func (c *Coordinator) stepAsync(ps *partitionState) {
	ps.mu.Lock()
	closed, loading := ps.closed, ps.loading
	ps.mu.Unlock()
	if closed {
		return
	}
	if loading && !c.stepLoad(ps) {
		return
	}
	c.stepMarkers(ps)
	c.stepAppend(ps)
}

// stepLoad loads the partition at its first Step and installs the shard
// at the first Step that finds the HW at the loaded end (committed); it
// reports whether the partition is loaded.
func (c *Coordinator) stepLoad(ps *partitionState) bool {
	if ps.loadedSh == nil {
		sh, end, err := c.load(ps.ctx, ps)
		if err != nil {
			// Tried again at the next Step, as runPartition does after a second.
			c.log.Error("load transaction state partition", "partition", ps.id, "err", err)
			return false
		}
		ps.loadedSh, ps.loadedEnd = sh, end
		if !c.committed(ps, end) {
			hwwait.Waiting(c.log, "transaction state", ps.id, end, ps.p.HighWatermark())
		}
	}
	if !c.committed(ps, ps.loadedEnd) {
		return false
	}
	sh := ps.loadedSh
	ps.loadedSh = nil
	return c.loaded(ps, sh)
}

// stepAppend appends the first queued write unless one is in flight; its
// completion is flushOne's.
func (c *Coordinator) stepAppend(ps *partitionState) {
	ps.mu.Lock()
	if ps.closed || ps.inFlight || len(ps.queue) == 0 {
		ps.mu.Unlock()
		return
	}
	w := ps.queue[0]
	ps.queue = ps.queue[1:]
	ps.inFlight = true
	ps.mu.Unlock()
	done := func(_ int64, err error) {
		ps.mu.Lock()
		ps.inFlight = false
		ps.mu.Unlock()
		if ps.ctx.Err() != nil {
			err = ErrNotLeader // unloaded meanwhile
		}
		if err != nil {
			c.log.Warn("append to transaction state partition", "partition", ps.id, "err", err)
		}
		c.complete(ps, w, err)
	}
	b, err := buildBatch(w.record, c.cfg.Now(), c.codecs)
	if err != nil {
		done(-1, err)
		return
	}
	ps.p.(AsyncPartition).AppendAsync(b, done)
}

// stepMarkers moves every marker job of the partition on by one step.
func (c *Coordinator) stepMarkers(ps *partitionState) {
	ps.mu.Lock()
	runs := slices.Clone(ps.runs)
	ps.mu.Unlock()
	for _, r := range runs {
		if ps.ctx.Err() != nil {
			return
		}
		c.stepRun(ps, r)
	}
	ps.mu.Lock()
	ps.runs = slices.DeleteFunc(ps.runs, func(r *markerRun) bool { return r.done })
	ps.mu.Unlock()
}

// stepRun is one step of runMarkers: send the markers not written yet,
// then queue the completion and wait for its outcome, backing off after a
// failure of either.
func (c *Coordinator) stepRun(ps *partitionState, r *markerRun) {
	now := c.cfg.Now()
	switch {
	case r.done, r.sending, now.Before(r.retryAt):
	case r.notify != nil:
		select {
		case err := <-r.notify:
			r.notify = nil
			if err == nil || errors.Is(err, ErrNotLeader) {
				r.done = true
				return
			}
			r.retryAt = now.Add(c.cfg.MarkerRetryBackoff)
		default:
		}
	case len(r.remaining) > 0:
		j := r.job
		j.Partitions = r.remaining
		r.sending = true
		c.cfg.Markers.(AsyncMarkerSender).WriteMarkersAsync(j, func(res map[TopicPartition]int16) {
			r.sending = false
			if ps.ctx.Err() != nil {
				r.done = true // the next coordinator resumes from the log
				return
			}
			retry, stop := c.markerAnswer(r.job, j.Partitions, res)
			switch {
			case stop:
				r.done = true
			case len(retry) > 0:
				r.remaining, r.retryAt = retry, c.cfg.Now().Add(c.cfg.MarkerRetryBackoff)
			default:
				r.remaining = nil
			}
		})
	default:
		notify := make(chan error, 1)
		queued := false
		code := c.stepPartition(ps, func(s *shard, now time.Time, eff *effects) {
			queued = s.completeTxn(r.job, now, eff, notify)
		})
		if code != 0 || !queued {
			r.done = true
			return
		}
		r.notify = notify
	}
}
