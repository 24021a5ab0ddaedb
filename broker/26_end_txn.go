package broker

// EndTxn, key 26, versions 0-5.
//
// Commits or aborts the transaction: the answer comes once PrepareCommit or
// PrepareAbort is durable in __transaction_state; the coordinator then
// writes the markers and completes the transaction in the background, and
// the producer's next transactional request gets CONCURRENT_TRANSACTIONS
// until it has. v2 introduced PRODUCER_FENCED (older versions get
// INVALID_PRODUCER_EPOCH), v3 is flexible, v4 may answer
// TRANSACTION_ABORTABLE (Brook's coordinator never does). v5 is
// transaction version 2 (KIP-890 part 2): every EndTxn bumps the epoch,
// the markers carry the bumped one, and the answer's producer_id and
// producer_epoch are what the producer continues with (a new id at epoch 0
// once the epochs are exhausted); below v5 they are -1.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/txn"
)

func (b *Broker) handleEndTxn(ctx context.Context, r *request, req *kmsg.EndTxnRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	tv := txn.TV0
	if req.Version >= 5 {
		tv = txn.TV2
	}
	return reply{wait: func() kmsg.Response {
		r := b.txns.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, tv)
		resp.ErrorCode = fencedForVersion(r.Err, req.Version, 2)
		resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch
		return resp
	}}, nil
}
