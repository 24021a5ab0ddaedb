package group

import (
	"context"
	"fmt"
	"time"

	"github.com/brook-mq/brook/internal/hwwait"
)

// load replays the partition from its log start offset to the log end
// offset seen at the start, as Kafka's GroupMetadataManager does; nothing is
// appended meanwhile because requests are refused while loading. The high
// watermark would not do: on a new leader it trails the log end until the
// followers' next fetch tells it theirs, and the records in between are
// commits and group metadata the old leader acknowledged. It returns that
// end: the shard is installed only once the HW reaches it (committed).
func (c *Coordinator) load(ctx context.Context, ps *partitionState) (*shard, int64, error) {
	l := newLoader()
	offset, end := ps.p.LogStartOffset(), ps.p.LogEndOffset()
	if c.cfg.Faults.LoadToHighWatermark {
		end = ps.p.HighWatermark()
	}
	for offset < end {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		data, err := ps.p.Read(offset, c.cfg.LoadBufferSize)
		if err != nil {
			return nil, 0, fmt.Errorf("read offsets partition %d at %d: %w", ps.id, offset, err)
		}
		next, n, err := l.applyBatches(data, c.codecs)
		if err != nil {
			return nil, 0, fmt.Errorf("replay offsets partition %d: %w", ps.id, err)
		}
		if n == 0 || next <= offset {
			return nil, 0, fmt.Errorf("replay offsets partition %d: no progress at offset %d", ps.id, offset)
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
	return sh, end, nil
}

// committed reports whether the records a load read up to end are
// committed, so that the coordinator may serve them. Kafka's coordinator
// serves them at once, and the records above its HW include the group
// metadata an old coordinator appended at a leader's SyncGroup but never
// saw committed, so never answered: a member then syncs from it (a Stable
// group answers SyncGroup from memory), and a failover to an ISR member
// that had not fetched it loses that generation, whose number the next
// coordinator hands out again with another leader and assignment, while
// the first generation's members still consume theirs. Brook answers
// COORDINATOR_LOAD_IN_PROGRESS, which clients retry, until the HW catches
// up: at the followers' next fetch, or once a follower that does not
// fetch has left the ISR. (Offsets above the HW alone would do no harm:
// losing them only moves a group back to offsets its members did reach.)
func (c *Coordinator) committed(ps *partitionState, end int64) bool {
	return c.cfg.Faults.ActAboveHighWatermark || ps.p.HighWatermark() >= end
}

// awaitCommitted blocks the goroutine driver until committed(ps, end). It
// reports false once the partition is unloaded; a failed wait (this
// broker no longer leads: its resignation is on its way) is tried again
// after a second, as a failed load is.
func (c *Coordinator) awaitCommitted(ctx context.Context, ps *partitionState, end int64) bool {
	if c.committed(ps, end) {
		return true
	}
	hwwait.Waiting(c.log, "offsets partition", ps.id, end, ps.p.HighWatermark())
	return hwwait.Until(ctx, end, ps.p.WaitForHighWatermark, c.log, "offsets partition", ps.id)
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
