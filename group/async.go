package group

import (
	"sort"

	"github.com/brook-mq/brook/internal/hwwait"
)

// AsyncPartition is a Partition whose appends answer through a callback
// instead of blocking, for a driver that runs the coordinator on one
// goroutine (the simulation, sim/). A partition given as one gets no
// goroutine: each Step loads it, or appends its next queued batch once the
// previous append answered. The commit timeout is then the
// AsyncPartition's: it calls done once the append is committed or failed.
type AsyncPartition interface {
	Partition
	// AppendAsync writes one record batch and calls done with its base
	// offset once it is committed, or with an error. done may run inside
	// AppendAsync or from a later call of the driver; never concurrently
	// with a Step.
	AppendAsync(batch []byte, done func(base int64, err error))
}

// Step does one round of what runPartition's goroutine does, for every led
// partition that is an AsyncPartition, in partition order.
func (c *Coordinator) Step() {
	c.mu.Lock()
	parts := make([]*partitionState, 0, len(c.parts))
	for _, ps := range c.parts {
		if ps.ctx != nil {
			parts = append(parts, ps)
		}
	}
	c.mu.Unlock()
	sort.Slice(parts, func(i, j int) bool { return parts[i].id < parts[j].id })
	for _, ps := range parts {
		c.stepPartition(ps)
	}
}

func (c *Coordinator) stepPartition(ps *partitionState) {
	ps.mu.Lock()
	loading, busy := ps.loading, ps.inFlight || ps.closed
	ps.mu.Unlock()
	if busy {
		return
	}
	if loading && !c.stepLoad(ps) {
		return
	}
	ws, recs := c.nextBatch(ps)
	if len(ws) == 0 {
		return
	}
	b, err := buildBatch(recs, c.cfg.Now(), c.codecs, ws[0].producer)
	if err != nil {
		c.appended(ps, ws, len(recs), -1, err)
		return
	}
	ps.mu.Lock()
	ps.inFlight = true
	ps.mu.Unlock()
	ps.p.(AsyncPartition).AppendAsync(b, func(base int64, err error) {
		ps.mu.Lock()
		ps.inFlight = false
		ps.mu.Unlock()
		if ps.ctx.Err() != nil {
			// Unloaded meanwhile, as appendBatch answers a cancelled append.
			base, err = -1, ErrNotLeader
		}
		c.appended(ps, ws, len(recs), base, err)
	})
}

// stepLoad loads the partition at its first Step and installs the shard
// at the first Step that finds the HW at the loaded end (committed); it
// reports whether the partition is loaded.
func (c *Coordinator) stepLoad(ps *partitionState) bool {
	if ps.loadedSh == nil {
		sh, end, err := c.load(ps.ctx, ps)
		if err != nil {
			// Tried again at the next Step, as runPartition does after a second.
			c.log.Error("load offsets partition", "partition", ps.id, "err", err)
			return false
		}
		ps.loadedSh, ps.loadedEnd = sh, end
		if !c.committed(ps, end) {
			hwwait.Waiting(c.log, "offsets partition", ps.id, end, ps.p.HighWatermark())
		}
	}
	if !c.committed(ps, ps.loadedEnd) {
		return false
	}
	sh := ps.loadedSh
	ps.loadedSh = nil
	return c.loaded(ps, sh)
}
