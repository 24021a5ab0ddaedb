package broker

// AlterPartition, key 56, versions 0-3.
//
// Partition leaders ask the controller to change an ISR. v1 answers
// INELIGIBLE_REPLICA for replicas that cannot join, v2 names topics by id,
// v3 carries each ISR member's broker epoch (KIP-903). Only the active
// controller serves it (NOT_CONTROLLER otherwise).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleAlterPartition(ctx context.Context, r *request, req *kmsg.AlterPartitionRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp, err := b.ctrl.AlterPartition(ctx, req)
	if err != nil {
		resp = req.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode = kerr.RequestTimedOut.Code
	}
	return respond(resp)
}
