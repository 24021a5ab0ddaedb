package broker

// EndTxn, key 26, versions 0-3.
//
// Commits or aborts the transaction: the answer comes once PrepareCommit or
// PrepareAbort is durable in __transaction_state; the coordinator then
// writes the markers and completes the transaction in the background, and
// the producer's next transactional request gets CONCURRENT_TRANSACTIONS
// until it has. v2 introduced PRODUCER_FENCED (older versions get
// INVALID_PRODUCER_EPOCH), v3 is flexible. v4 (TRANSACTION_ABORTABLE) and
// v5 (KIP-890 part 2 epoch bumps) are not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleEndTxn(ctx context.Context, _ *request, req *kmsg.EndTxnRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	return reply{wait: func() kmsg.Response {
		code := b.txns.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		resp.ErrorCode = fencedForVersion(code, req.Version, 2)
		return resp
	}}, nil
}
