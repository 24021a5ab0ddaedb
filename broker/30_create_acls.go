package broker

// CreateAcls, key 30, versions 0-3.
//
// Writes ACLs to the metadata store in Kafka's ZooKeeper layout, where
// every broker's watch picks them up. Needs ALTER on the cluster; each
// creation is validated as Kafka does (INVALID_REQUEST), and without an
// authorizer every creation gets SECURITY_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleCreateACLs(ctx context.Context, r *request, req *kmsg.CreateACLsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	set := func(i int, code int16, msg string) {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
		resp.Results[i].ErrorCode = code
		if code != 0 {
			resp.Results[i].ErrorMessage = &msg
		}
	}
	var code int16
	var msg string
	switch {
	case b.acls == nil:
		code, msg = kerr.SecurityDisabled.Code, noAuthorizerMsg
	case !b.authorizeCluster(r, auth.OpAlter):
		code, msg = kerr.ClusterAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Message
	}
	if code != 0 {
		for i := range resp.Results {
			set(i, code, msg)
		}
		return respond(resp)
	}
	var valid []auth.Binding
	var at []int
	for i, c := range req.Creations {
		bd, code, msg := creationBinding(req.Version, c)
		set(i, code, msg)
		if code == 0 {
			valid, at = append(valid, bd), append(at, i)
		}
	}
	if len(valid) > 0 {
		if err := b.aclSync.Add(ctx, valid); err != nil {
			b.logger.Warn("create acls", "err", err)
			for _, i := range at {
				set(i, kerr.UnknownServerError.Code, err.Error())
			}
		}
	}
	return respond(resp)
}
