package broker

// ListGroups, key 16, versions 0-5.
//
// v3 is flexible, v4 filters by state, v5 (KIP-848, Kafka 3.8+) by type and
// answers each group's type: "classic", the only type Brook serves.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleListGroups(ctx context.Context, r *request, req *kmsg.ListGroupsRequest) (reply, error) {
	resp := b.groups.ListGroups(r.groupContext(ctx), req)
	b.authorizeListGroups(r, resp)
	return respond(resp)
}
