package broker

// AlterConfigs, key 33, versions 0-2.
//
// The legacy API: the configs given replace the resource's whole set of
// overrides; configs left out return to their defaults. Values are
// validated first (INVALID_CONFIG names the key); validate_only checks
// without writing. v2 is flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleAlterConfigs(ctx context.Context, r *request, req *kmsg.AlterConfigsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		changes := make([]configChange, len(rr.Configs))
		for i, c := range rr.Configs {
			changes[i] = configChange{name: c.Name, op: kmsg.IncrementalAlterConfigOpSet, value: c.Value}
		}
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if code, msg := b.refuseConfigResource(r, rr.ResourceType, rr.ResourceName, auth.OpAlterConfigs); code != 0 {
			sr.ErrorCode, sr.ErrorMessage = code, &msg
		} else if code, msg := b.alterResource(ctx, rr.ResourceType, rr.ResourceName, changes, true, req.ValidateOnly); code != 0 {
			sr.ErrorCode, sr.ErrorMessage = code, &msg
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return respond(resp)
}
