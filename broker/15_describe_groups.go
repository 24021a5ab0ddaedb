package broker

// DescribeGroups, key 15, versions 0-5.
//
// v3 adds authorized operations, v4 group_instance_id, v5 is flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleDescribeGroups(ctx context.Context, r *request, req *kmsg.DescribeGroupsRequest) (reply, error) {
	return respond(b.authorizeDescribeGroups(r, req, func(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
		return b.groups.DescribeGroups(r.groupContext(ctx), req)
	}))
}
