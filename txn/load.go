package txn

import (
	"context"
	"fmt"

	"github.com/brook-mq/brook/internal/hwwait"
)

// load replays the partition from its log start offset to its log end
// offset seen at the start, as Kafka's TransactionStateManager does: a new
// leader's HW trails its log end until the followers fetch again, and the
// records in between may be transitions the old coordinator acknowledged.
// It returns that end: the shard is installed only once the HW reaches it
// (awaitCommitted). Nothing is appended meanwhile because requests are
// refused while loading.
func (c *Coordinator) load(ctx context.Context, ps *partitionState) (*shard, int64, error) {
	l := loader{txns: map[string]snapshot{}}
	offset, end := ps.p.LogStartOffset(), ps.p.LogEndOffset()
	for offset < end {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		data, err := ps.p.Read(offset, c.cfg.LoadBufferSize)
		if err != nil {
			return nil, 0, fmt.Errorf("read transaction state partition %d at %d: %w", ps.id, offset, err)
		}
		next, n, err := l.applyBatches(data, c.codecs)
		if err != nil {
			return nil, 0, fmt.Errorf("replay transaction state partition %d: %w", ps.id, err)
		}
		if n == 0 || next <= offset {
			return nil, 0, fmt.Errorf("replay transaction state partition %d: no progress at offset %d", ps.id, offset)
		}
		offset = next
	}
	sh := newShard(ps.id, ps.epoch, c.limits)
	for id, s := range l.txns {
		sh.txns[id] = &txnMetadata{id: id, snapshot: s}
	}
	return sh, end, nil
}

// committed reports whether the records a load read up to end are
// committed, so that the coordinator may act on them. Kafka's coordinator
// acts at once: it answers from, and resumes the markers of, records above
// its HW, which a failover before the HW reaches them can lose, and the
// next coordinator then decides the transaction again, possibly the other
// way (an atomicity violation), or no longer knows partitions it answered
// were added (a hanging transaction). Brook answers
// COORDINATOR_LOAD_IN_PROGRESS, which clients retry, until the HW catches
// up: at the followers' next fetch, or once a follower that does not
// fetch has left the ISR.
func (c *Coordinator) committed(ps *partitionState, end int64) bool {
	return c.cfg.Faults.ActAboveHighWatermark || ps.p.HighWatermark() >= end
}

// awaitCommitted blocks the goroutine driver until committed(ps, end). It
// reports false once the partition is unloaded; a failed wait (this
// broker no longer leads: its resignation is on its way) is tried again
// after a second, as a failed load is.
func (c *Coordinator) awaitCommitted(ps *partitionState, end int64) bool {
	if c.committed(ps, end) {
		return true
	}
	hwwait.Waiting(c.log, "transaction state", ps.id, end, ps.p.HighWatermark())
	return hwwait.Until(ps.ctx, end, ps.p.WaitForHighWatermark, c.log, "transaction state", ps.id)
}
