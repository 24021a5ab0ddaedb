package broker

// SyncGroup, key 14, versions 0-5.
//
// Blocks until the leader's assignment arrives. v3 adds
// group_instance_id, v4 is flexible, v5 protocol type and name.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleSyncGroup(ctx context.Context, r *request, req *kmsg.SyncGroupRequest) (reply, error) {
	if !b.authorize(r, auth.OpRead, auth.ResourceGroup, req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return respond(resp)
	}
	return respond(b.groups.SyncGroup(r.groupContext(ctx), req))
}
