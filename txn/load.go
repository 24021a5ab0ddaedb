package txn

import (
	"context"
	"fmt"
)

// load replays the partition from its log start offset to its log end
// offset seen at the start, as Kafka's TransactionStateManager does: a new
// leader's log may hold records of the previous coordinator that are not
// committed yet, and they describe transitions clients may have been told
// about. Nothing is appended meanwhile because requests are refused while
// loading.
func (c *Coordinator) load(ctx context.Context, ps *partitionState) (*shard, error) {
	l := loader{txns: map[string]snapshot{}}
	offset, end := ps.p.LogStartOffset(), ps.p.LogEndOffset()
	for offset < end {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := ps.p.Read(offset, c.cfg.LoadBufferSize)
		if err != nil {
			return nil, fmt.Errorf("read transaction state partition %d at %d: %w", ps.id, offset, err)
		}
		next, n, err := l.applyBatches(data, c.codecs)
		if err != nil {
			return nil, fmt.Errorf("replay transaction state partition %d: %w", ps.id, err)
		}
		if n == 0 || next <= offset {
			return nil, fmt.Errorf("replay transaction state partition %d: no progress at offset %d", ps.id, offset)
		}
		offset = next
	}
	sh := newShard(ps.id, ps.epoch, c.limits)
	for id, s := range l.txns {
		sh.txns[id] = &txnMetadata{id: id, snapshot: s}
	}
	return sh, nil
}
