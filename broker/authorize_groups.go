package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

// The group APIs whose answers the coordinator builds are checked around
// it: refused groups are left out of the request and answered here, and
// topics the principal may not describe are hidden from offset fetches.

// splitGroups returns the groups the principal may perform op on and the
// refused ones.
func (b *Broker) splitGroups(r *request, op auth.Operation, groups []string) (allowed []string, refused map[string]bool) {
	for _, g := range groups {
		if b.authorize(r, op, auth.ResourceGroup, g) {
			allowed = append(allowed, g)
			continue
		}
		if refused == nil {
			refused = map[string]bool{}
		}
		refused[g] = true
	}
	return allowed, refused
}

// authorizeDescribeGroups answers refused groups GROUP_AUTHORIZATION_FAILED
// (in request order) and fills real authorized operations. describe
// answers the allowed ones.
func (b *Broker) authorizeDescribeGroups(r *request, req *kmsg.DescribeGroupsRequest, describe func(*kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse) *kmsg.DescribeGroupsResponse {
	groups := req.Groups
	allowed, refused := b.splitGroups(r, auth.OpDescribe, groups)
	req.Groups = allowed
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	if len(allowed) > 0 {
		resp = describe(req)
	}
	answered := map[string]kmsg.DescribeGroupsResponseGroup{}
	for _, g := range resp.Groups {
		if b.acls != nil && req.IncludeAuthorizedOperations {
			g.AuthorizedOperations = b.authorizedOps(r, auth.ResourceGroup, g.Group)
		}
		answered[g.Group] = g
	}
	resp.Groups = resp.Groups[:0]
	for _, name := range groups {
		if refused[name] {
			g := kmsg.NewDescribeGroupsResponseGroup()
			g.Group, g.ErrorCode = name, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
		} else if g, ok := answered[name]; ok {
			resp.Groups = append(resp.Groups, g)
		}
	}
	return resp
}

// authorizeListGroups keeps the groups the principal may describe, unless
// it may describe the cluster.
func (b *Broker) authorizeListGroups(r *request, resp *kmsg.ListGroupsResponse) {
	if b.authorizeCluster(r, auth.OpDescribe) {
		return
	}
	kept := resp.Groups[:0]
	for _, g := range resp.Groups {
		if b.authorize(r, auth.OpDescribe, auth.ResourceGroup, g.Group) {
			kept = append(kept, g)
		}
	}
	resp.Groups = kept
}

// authorizeOffsetFetch applies DESCRIBE on the group (refused:
// GROUP_AUTHORIZATION_FAILED) and on each topic: named topics refused get
// TOPIC_AUTHORIZATION_FAILED, and a fetch of all topics leaves them out.
func (b *Broker) authorizeOffsetFetch(r *request, req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) {
	if b.acls == nil {
		return
	}
	describable := func(topic string) bool { return b.authorize(r, auth.OpDescribe, auth.ResourceTopic, topic) }
	if req.Version < 8 {
		if !b.authorize(r, auth.OpDescribe, auth.ResourceGroup, req.Group) {
			*resp = *req.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return
		}
		resp.Topics = describableOffsets(resp.Topics, req.Topics == nil, describable,
			func(t *kmsg.OffsetFetchResponseTopic) string { return t.Topic },
			func(t *kmsg.OffsetFetchResponseTopic) {
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
				}
			})
		return
	}
	all := map[string]bool{}
	for _, g := range req.Groups {
		all[g.Group] = g.Topics == nil
	}
	for gi := range resp.Groups {
		g := &resp.Groups[gi]
		if !b.authorize(r, auth.OpDescribe, auth.ResourceGroup, g.Group) {
			g.Topics, g.ErrorCode = nil, kerr.GroupAuthorizationFailed.Code
			continue
		}
		g.Topics = describableOffsets(g.Topics, all[g.Group], describable,
			func(t *kmsg.OffsetFetchResponseGroupTopic) string { return t.Topic },
			func(t *kmsg.OffsetFetchResponseGroupTopic) {
				for i := range t.Partitions {
					p := &t.Partitions[i]
					p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode = -1, -1, nil, kerr.TopicAuthorizationFailed.Code
				}
			})
	}
}

// describableOffsets is an OffsetFetch answer's topics (v0-7 or v8+'s
// per-group form) as the principal may see them: a topic it may not
// describe is left out of a fetch of all topics and refused (refuse
// sets its partitions' TOPIC_AUTHORIZATION_FAILED) when it was named.
func describableOffsets[T any](topics []T, all bool, describable func(string) bool, name func(*T) string, refuse func(*T)) []T {
	kept := topics[:0]
	for i := range topics {
		t := &topics[i]
		if !describable(name(t)) {
			if all {
				continue
			}
			refuse(t)
		}
		kept = append(kept, *t)
	}
	return kept
}
