package replica

import (
	"context"
	"slices"
)

// LowWatermark is DeleteRecords' low watermark, as Kafka's
// Partition.lowWatermarkIfLeader: the least log start offset over this
// leader's log and every other assigned replica whose broker is alive (as
// alive reports, from the metadata cache), taken from the log start
// offsets followers send in their fetches. A live follower not heard from
// in this leadership counts as -1. ErrNotLeader unless this broker leads.
func (p *Partition) LowWatermark(alive func(brokerID int32) bool) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lowWatermarkLocked(alive)
}

func (p *Partition) lowWatermarkLocked(alive func(int32) bool) (int64, error) {
	if p.leader != p.localID {
		return -1, ErrNotLeader
	}
	low := p.log.LogStartOffset()
	for id, f := range p.followers {
		// followers may still hold a replica reassigned away.
		if slices.Contains(p.replicas, id) && alive(id) {
			low = min(low, f.logStartOffset)
		}
	}
	return low, nil
}

// WaitForLowWatermark blocks until the low watermark reaches offset and
// returns it, as Kafka's DelayedDeleteRecords: records deleted on the
// leader only stay deleted after a failover once every live replica has
// moved its log start offset past them too. It ends with ErrNotLeader when
// this broker stops leading, or with ctx.
func (p *Partition) WaitForLowWatermark(ctx context.Context, offset int64, alive func(brokerID int32) bool) (int64, error) {
	ch := make(chan struct{}, 1)
	cancel := p.Watch(ch)
	defer cancel()
	for {
		low, err := p.LowWatermark(alive)
		if err != nil || low >= offset {
			return low, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	}
}
