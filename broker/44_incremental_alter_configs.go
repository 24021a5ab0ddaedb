package broker

// IncrementalAlterConfigs, key 44, versions 0-1.
//
// Each config carries an operation: SET, DELETE (back to the default),
// APPEND or SUBTRACT (list configs such as cleanup.policy, starting from
// the effective value). Other configs of the resource stay as they are.
// On a broker logger resource, SET and DELETE change log levels at
// runtime (broker_loggers.go). v1 is flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, _ *request, req *kmsg.IncrementalAlterConfigsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		changes := make([]configChange, len(rr.Configs))
		for i, c := range rr.Configs {
			changes[i] = configChange{name: c.Name, op: c.Op, value: c.Value}
		}
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if code, msg := b.alterResource(ctx, rr.ResourceType, rr.ResourceName, changes, false, req.ValidateOnly); code != 0 {
			sr.ErrorCode, sr.ErrorMessage = code, &msg
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return respond(resp)
}
