package broker

// OffsetFetch, key 9, versions 1-8.
//
// v2 adds a top-level error code and a null topic list meaning all
// partitions of the group, v5 committed_leader_epoch, v6 is flexible, v7
// require_stable, v8 batches several groups.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleOffsetFetch(ctx context.Context, r *request, req *kmsg.OffsetFetchRequest) (reply, error) {
	resp := b.groups.OffsetFetch(r.groupContext(ctx), req)
	b.authorizeOffsetFetch(r, req, resp)
	return respond(resp)
}
