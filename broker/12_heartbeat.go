package broker

// Heartbeat, key 12, versions 0-4.
//
// v3 adds group_instance_id, v4 is flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleHeartbeat(ctx context.Context, r *request, req *kmsg.HeartbeatRequest) (reply, error) {
	if !b.authorize(r, auth.OpRead, auth.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	return respond(b.groups.Heartbeat(r.groupContext(ctx), req))
}
