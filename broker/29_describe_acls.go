package broker

// DescribeAcls, key 29, versions 0-3.
//
// Lists the ACLs a filter selects, grouped by resource pattern. Needs
// DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED); without an
// authorizer Kafka answers SECURITY_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleDescribeACLs(_ context.Context, r *request, req *kmsg.DescribeACLsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(code int16, msg string) (reply, error) {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return respond(resp)
	}
	if b.acls == nil {
		return fail(kerr.SecurityDisabled.Code, noAuthorizerMsg)
	}
	if !b.authorizeCluster(r, auth.OpDescribe) {
		return fail(kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Message)
	}
	f, ok := aclFilter(req.Version, req.ResourceType, req.ResourceName, req.ResourcePatternType,
		req.Principal, req.Host, req.Operation, req.PermissionType)
	if !ok {
		return fail(kerr.InvalidRequest.Code, "invalid acl filter")
	}
	bs := b.acls.Matching(f)
	sortBindings(bs)
	for i, bd := range bs {
		if i == 0 || bs[i-1].Resource != bd.Resource {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType = kmsg.ACLResourceType(bd.Resource.Type)
			res.ResourceName = bd.Resource.Name
			res.ResourcePatternType = kmsg.ACLResourcePatternType(bd.Resource.Pattern)
			resp.Resources = append(resp.Resources, res)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host = bd.Entry.Principal, bd.Entry.Host
		a.Operation, a.PermissionType = kmsg.ACLOperation(bd.Entry.Operation), kmsg.ACLPermissionType(bd.Entry.Permission)
		last := &resp.Resources[len(resp.Resources)-1]
		last.ACLs = append(last.ACLs, a)
	}
	return respond(resp)
}
