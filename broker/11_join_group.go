package broker

// JoinGroup, key 11, versions 0-9.
//
// Blocks until the group's join phase completes, like Kafka, which mutes
// the connection meanwhile. v1 adds rebalance_timeout_ms, v4 requires a
// member id handed out by the coordinator (MEMBER_ID_REQUIRED, KIP-394), v5
// adds group_instance_id (static membership), v6 is flexible, v7 returns
// the protocol type, v8 a reason, v9 skip_assignment.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleJoinGroup(ctx context.Context, r *request, req *kmsg.JoinGroupRequest) (reply, error) {
	if !b.authorize(r, auth.OpRead, auth.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	return respond(b.groups.JoinGroup(r.groupContext(ctx), req))
}
