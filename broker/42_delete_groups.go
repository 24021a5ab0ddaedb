package broker

// DeleteGroups, key 42, versions 0-2.
//
// Only empty groups can be deleted (NON_EMPTY_GROUP); v2 is flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleDeleteGroups(ctx context.Context, r *request, req *kmsg.DeleteGroupsRequest) (reply, error) {
	groups := req.Groups
	allowed, refused := b.splitGroups(r, auth.OpDelete, groups)
	req.Groups = allowed
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	if len(allowed) > 0 {
		resp = b.groups.DeleteGroups(r.groupContext(ctx), req)
	}
	for _, g := range groups {
		if refused[g] {
			res := kmsg.NewDeleteGroupsResponseGroup()
			res.Group, res.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, res)
		}
	}
	return respond(resp)
}
