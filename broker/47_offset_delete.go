package broker

// OffsetDelete, key 47, versions 0.
//
// Deletes committed offsets of partitions the group no longer consumes
// (GROUP_SUBSCRIBED_TO_TOPIC otherwise).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleOffsetDelete(ctx context.Context, r *request, req *kmsg.OffsetDeleteRequest) (reply, error) {
	return respond(b.groups.OffsetDelete(r.groupContext(ctx), req))
}
