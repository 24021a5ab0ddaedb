package broker

// AlterPartitionReassignments, key 45, versions 0-1.
//
// Starts, replaces or (with replicas null) cancels partition reassignments
// through the active controller (KIP-455; kafka-reassign-partitions
// --execute and --cancel). A broker that is not the active controller
// answers NOT_CONTROLLER at the top level and the admin client retries at
// Metadata's controller. Per-partition errors are Kafka's:
// INVALID_REPLICA_ASSIGNMENT, UNKNOWN_TOPIC_OR_PARTITION,
// NO_REASSIGNMENT_IN_PROGRESS. v1 (Kafka 4.x) adds
// allow_replication_factor_change; false turns a change of the number of
// replicas into INVALID_REPLICATION_FACTOR. The answer comes once the
// reassignment has started, not when it completes.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleAlterPartitionReassignments(ctx context.Context, r *request, req *kmsg.AlterPartitionAssignmentsRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	if b.ctrl == nil {
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = kerr.NotController.Code, &kerr.NotController.Message
		return respond(resp)
	}
	resp, err := b.ctrl.AlterPartitionReassignments(ctx, req)
	if err != nil {
		return reply{}, fmt.Errorf("alter partition reassignments: %w", err)
	}
	return respond(resp)
}
