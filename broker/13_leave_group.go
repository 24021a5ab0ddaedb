package broker

// LeaveGroup, key 13, versions 0-5.
//
// v3 batches members (with group_instance_id), v4 is flexible, v5 adds a
// reason.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleLeaveGroup(ctx context.Context, r *request, req *kmsg.LeaveGroupRequest) (reply, error) {
	return respond(b.groups.LeaveGroup(r.groupContext(ctx), req))
}
