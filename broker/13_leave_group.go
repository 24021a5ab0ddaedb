package broker

// LeaveGroup, key 13, versions 0-5.
//
// v3 batches members (with group_instance_id), v4 is flexible, v5 adds a
// reason.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleLeaveGroup(ctx context.Context, r *request, req *kmsg.LeaveGroupRequest) (reply, error) {
	if !b.authorize(r, auth.OpRead, auth.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	return respond(b.groups.LeaveGroup(r.groupContext(ctx), req))
}
