package group

import (
	"context"
	"fmt"
	"time"
)

// load replays the partition from its log start offset to the log end
// offset seen at the start, as Kafka's GroupMetadataManager does; nothing is
// appended meanwhile because requests are refused while loading. The high
// watermark would not do: on a new leader it trails the log end until the
// followers' next fetch tells it theirs, and the records in between are
// commits and group metadata the old leader acknowledged. Unlike the
// transaction coordinator (txn/load.go) it serves them before the HW
// reaches them, since losing them at a failover only moves a group back
// (offsets a member did reach, state its members rejoin from) and nothing
// it wrote from them is acted on by another partition, as markers are.
func (c *Coordinator) load(ctx context.Context, ps *partitionState) (*shard, error) {
	l := newLoader()
	offset, end := ps.p.LogStartOffset(), ps.p.LogEndOffset()
	if h, ok := ps.p.(interface{ HighWatermark() int64 }); ok && c.cfg.Faults.LoadToHighWatermark {
		end = h.HighWatermark()
	}
	for offset < end {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := ps.p.Read(offset, c.cfg.LoadBufferSize)
		if err != nil {
			return nil, fmt.Errorf("read offsets partition %d at %d: %w", ps.id, offset, err)
		}
		next, n, err := l.applyBatches(data, c.codecs)
		if err != nil {
			return nil, fmt.Errorf("replay offsets partition %d: %w", ps.id, err)
		}
		if n == 0 || next <= offset {
			return nil, fmt.Errorf("replay offsets partition %d: no progress at offset %d", ps.id, offset)
		}
		offset = next
	}
	now := c.cfg.Now()
	sh := newShard(ps.id, c.limits)
	if c.cfg.NewMemberID != nil {
		sh.newMemberID = c.cfg.NewMemberID
	}
	sh.faults = c.cfg.Faults
	sh.groups = l.build(now)
	l.buildTxnOffsets(sh, now)
	var eff effects
	for _, g := range sh.groups {
		c.onGroupLoaded(sh, g, now, &eff)
	}
	// A loaded group has no waiters, so the only effects are writes.
	ps.mu.Lock()
	c.enqueueLocked(ps, &eff)
	ps.mu.Unlock()
	return sh, nil
}

// onGroupLoaded gives loaded members a session timeout to show up, and
// rebalances a group above group.max.size (the limit may have been
// lowered) so that its members can commit before being shed.
func (c *Coordinator) onGroupLoaded(sh *shard, g *group, now time.Time, eff *effects) {
	for _, m := range g.members {
		resetHeartbeat(m, now)
	}
	if len(g.members) > sh.limits.maxGroupSize {
		sh.prepareRebalance(g, now, eff)
	}
}
