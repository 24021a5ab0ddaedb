package broker

// DeleteAcls, key 31, versions 0-3.
//
// Removes the ACLs each filter selects and answers them per filter.
// Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED per filter);
// without an authorizer SECURITY_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleDeleteACLs(ctx context.Context, r *request, req *kmsg.DeleteACLsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	failAll := func(code int16, msg string) (reply, error) {
		for i := range resp.Results {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, &msg
		}
		return respond(resp)
	}
	if b.acls == nil {
		return failAll(kerr.SecurityDisabled.Code, noAuthorizerMsg)
	}
	if !b.authorizeCluster(r, auth.OpAlter) {
		return failAll(kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Message)
	}
	var filters []auth.Filter
	var at []int
	for i, f := range req.Filters {
		af, ok := aclFilter(req.Version, f.ResourceType, f.ResourceName, f.ResourcePatternType,
			f.Principal, f.Host, f.Operation, f.PermissionType)
		if !ok {
			msg := "invalid acl filter"
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = kerr.InvalidRequest.Code, &msg
			continue
		}
		filters, at = append(filters, af), append(at, i)
	}
	deleted, err := b.aclSync.Remove(ctx, filters)
	if err != nil {
		b.logger.Warn("delete acls", "err", err)
		return failAll(kerr.UnknownServerError.Code, err.Error())
	}
	for j, bs := range deleted {
		sortBindings(bs)
		res := &resp.Results[at[j]]
		for _, bd := range bs {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType = kmsg.ACLResourceType(bd.Resource.Type)
			m.ResourceName = bd.Resource.Name
			m.ResourcePatternType = kmsg.ACLResourcePatternType(bd.Resource.Pattern)
			m.Principal, m.Host = bd.Entry.Principal, bd.Entry.Host
			m.Operation, m.PermissionType = kmsg.ACLOperation(bd.Entry.Operation), kmsg.ACLPermissionType(bd.Entry.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
	}
	return respond(resp)
}
