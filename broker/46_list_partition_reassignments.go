package broker

// ListPartitionReassignments, key 46, version 0.
//
// Lists the reassignments in progress (replicas, adding_replicas,
// removing_replicas) from the active controller's state, for the named
// partitions or (topics null) all; partitions not being reassigned, and
// unknown ones, are left out, as Kafka does. Elsewhere: NOT_CONTROLLER.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleListPartitionReassignments(ctx context.Context, r *request, req *kmsg.ListPartitionReassignmentsRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	if b.ctrl == nil {
		resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = kerr.NotController.Code, &kerr.NotController.Message
		return respond(resp)
	}
	resp, err := b.ctrl.ListPartitionReassignments(ctx, req)
	if err != nil {
		return reply{}, fmt.Errorf("list partition reassignments: %w", err)
	}
	return respond(resp)
}
