package broker

// LeaderAndISR, key 4, versions 0-7; StopReplica, key 5, versions 0-4;
// UpdateMetadata, key 6, versions 0-8.
//
// The controller's commands to brokers, sent over the inter-broker
// listener (to itself they are applied in-process, through the same
// applyControllerRequest). Requests from a controller older than the newest
// one seen are answered STALE_CONTROLLER_EPOCH and not applied.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleControllerRequest(_ context.Context, r *request, req kmsg.Request) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp, err := b.applyControllerRequest(req)
	if err != nil {
		return reply{}, err
	}
	return respond(resp)
}
