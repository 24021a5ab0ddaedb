package broker

// DeleteGroups, key 42, versions 0-2.
//
// Only empty groups can be deleted (NON_EMPTY_GROUP); v2 is flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleDeleteGroups(ctx context.Context, r *request, req *kmsg.DeleteGroupsRequest) (reply, error) {
	return respond(b.groups.DeleteGroups(r.groupContext(ctx), req))
}
