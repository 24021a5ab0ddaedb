package broker

// Heartbeat, key 12, versions 0-4.
//
// v3 adds group_instance_id, v4 is flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleHeartbeat(ctx context.Context, r *request, req *kmsg.HeartbeatRequest) (reply, error) {
	return respond(b.groups.Heartbeat(r.groupContext(ctx), req))
}
