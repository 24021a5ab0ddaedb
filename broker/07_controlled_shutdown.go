package broker

// ControlledShutdown, key 7, versions 0-3.
//
// A broker about to stop asks the controller to move its leaderships away
// first; the answer lists the partitions it still leads, and the broker
// asks again until none remain. Only the active controller serves it
// (NOT_CONTROLLER otherwise). v0 has a request header without client id.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleControlledShutdown(ctx context.Context, r *request, req *kmsg.ControlledShutdownRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	if !b.isActiveController() {
		resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
		resp.ErrorCode = kerr.NotController.Code
		return respond(resp)
	}
	resp, err := b.ctrl.ControlledShutdown(ctx, req)
	if err != nil {
		resp = req.ResponseKind().(*kmsg.ControlledShutdownResponse)
		resp.ErrorCode = kerr.RequestTimedOut.Code
	}
	return respond(resp)
}
