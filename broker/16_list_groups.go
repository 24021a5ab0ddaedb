package broker

// ListGroups, key 16, versions 0-4.
//
// v3 is flexible, v4 filters by state.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleListGroups(ctx context.Context, r *request, req *kmsg.ListGroupsRequest) (reply, error) {
	return respond(b.groups.ListGroups(r.groupContext(ctx), req))
}
