package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Send delivers a controller request to a broker. It implements
// controller.Sender: the controller's messages to this broker are applied
// in-process, exactly as they would be if they came over the inter-broker
// listener, so single-node and cluster mode share one metadata path.
func (b *Broker) Send(_ context.Context, brokerID int32, req kmsg.Request) (kmsg.Response, error) {
	if brokerID != b.cfg.BrokerID {
		return nil, fmt.Errorf("send %s to broker %d: inter-broker requests need the cluster mode", kmsg.NameForKey(req.Key()), brokerID)
	}
	return b.applyControllerRequest(req)
}

// applyControllerRequest applies LeaderAndISR, UpdateMetadata and
// StopReplica, whichever way they arrived.
func (b *Broker) applyControllerRequest(req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		return b.replicas.ApplyLeaderAndISR(r), nil
	case *kmsg.UpdateMetadataRequest:
		b.meta.apply(r)
		resp := kmsg.NewPtrUpdateMetadataResponse()
		resp.SetVersion(r.Version)
		return resp, nil
	case *kmsg.StopReplicaRequest:
		return b.replicas.ApplyStopReplica(r), nil
	}
	return nil, fmt.Errorf("unexpected controller request %s", kmsg.NameForKey(req.Key()))
}
