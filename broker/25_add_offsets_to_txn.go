package broker

// AddOffsetsToTxn, key 25, versions 0-4.
//
// Adds the group's __consumer_offsets partition to the transaction, so that
// the TxnOffsetCommit records written there get the transaction's marker.
// v2 introduced PRODUCER_FENCED (older versions get INVALID_PRODUCER_EPOCH),
// v3 is flexible, v4 may answer TRANSACTION_ABORTABLE (Brook's coordinator
// never does). A producer of transaction version 2 does not send it: its
// TxnOffsetCommit v5 adds the partition (28_txn_offset_commit.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleAddOffsetsToTxn(ctx context.Context, r *request, req *kmsg.AddOffsetsToTxnRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	return reply{wait: func() kmsg.Response {
		code := b.txns.AddOffsets(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group)
		resp.ErrorCode = fencedForVersion(code, req.Version, 2)
		return resp
	}}, nil
}
