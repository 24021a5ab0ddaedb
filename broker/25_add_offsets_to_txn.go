package broker

// AddOffsetsToTxn, key 25, versions 0-3.
//
// Adds the group's __consumer_offsets partition to the transaction, so that
// the TxnOffsetCommit records written there get the transaction's marker.
// v2 introduced PRODUCER_FENCED (older versions get INVALID_PRODUCER_EPOCH),
// v3 is flexible. v4 (TRANSACTION_ABORTABLE) is not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleAddOffsetsToTxn(ctx context.Context, _ *request, req *kmsg.AddOffsetsToTxnRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	return reply{wait: func() kmsg.Response {
		code := b.txns.AddOffsets(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
		resp.ErrorCode = fencedForVersion(code, req.Version, 2)
		return resp
	}}, nil
}
