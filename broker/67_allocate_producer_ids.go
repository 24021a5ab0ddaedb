package broker

// AllocateProducerIds, key 67, version 0.
//
// Kafka 3.9 brokers in ZooKeeper mode take their producer id blocks from
// the active controller with it; only the controller serves it
// (NOT_CONTROLLER otherwise), and the broker retries elsewhere.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleAllocateProducerIDs(ctx context.Context, r *request, req *kmsg.AllocateProducerIDsRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp, err := b.ctrl.AllocateProducerIDs(ctx, req)
	if err != nil {
		resp = req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		resp.ErrorCode = kerr.RequestTimedOut.Code
	}
	return respond(resp)
}
