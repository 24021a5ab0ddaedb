package replica

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// truncateDiverged cuts the log of every partition that waits for
// truncation, asking the leader with OffsetForLeaderEpoch where the
// follower's latest epoch ends on the leader (Kafka's KIP-101/279 rule).
// It reports false when the request failed.
func (f *fetcher) truncateDiverged(ctx context.Context) bool {
	req, sent := f.buildEpochRequest()
	if req == nil {
		return true
	}
	rctx, cancel := context.WithTimeout(ctx, f.m.cfg.SocketTimeout)
	defer cancel()
	r, err := f.m.cfg.Cluster.Request(rctx, f.source, fetcherPurpose, req)
	if err != nil {
		if ctx.Err() == nil {
			f.m.logger.Warn("OffsetForLeaderEpoch failed", "leader", f.source, "err", err)
		}
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps.ApplyEpochResponse(r.(*kmsg.OffsetForLeaderEpochResponse), sent, f.lookup)
	return true
}

// buildEpochRequest builds the OffsetForLeaderEpoch request for the
// partitions waiting for truncation (LeaderFetcher.EpochRequest).
func (f *fetcher) buildEpochRequest() (*kmsg.OffsetForLeaderEpochRequest, EpochSent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.steps.EpochRequest(f.partsLocked())
}
