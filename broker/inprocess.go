package broker

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Send delivers a controller request to a broker. It implements
// controller.Sender: the controller's messages to this broker are applied
// in-process, exactly as if they came over the inter-broker listener, and
// go over that listener to the others.
func (b *Broker) Send(ctx context.Context, brokerID int32, req kmsg.Request) (kmsg.Response, error) {
	if brokerID != b.cfg.BrokerID {
		return b.peers.Request(ctx, brokerID, "controller", req)
	}
	return b.applyControllerRequest(req)
}

// controllerFence remembers the newest controller epoch this broker has
// heard from: requests from an older controller (a zombie that lost its
// ZooKeeper session) are refused with STALE_CONTROLLER_EPOCH.
type controllerFence struct {
	mu    sync.Mutex
	epoch int32
}

// admit reports whether a request of controller epoch e may be applied.
func (f *controllerFence) admit(e int32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e < f.epoch {
		return false
	}
	f.epoch = e
	return true
}

// applyControllerRequest applies LeaderAndISR, UpdateMetadata and
// StopReplica, whichever way they arrived.
func (b *Broker) applyControllerRequest(req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.LeaderAndISRRequest:
		if b.staleBrokerEpoch(r.BrokerEpoch) {
			resp := r.ResponseKind().(*kmsg.LeaderAndISRResponse)
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return resp, nil
		}
		if !b.fence.admit(r.ControllerEpoch) {
			resp := r.ResponseKind().(*kmsg.LeaderAndISRResponse)
			resp.ErrorCode = kerr.StaleControllerEpoch.Code
			return resp, nil
		}
		return b.replicas.ApplyLeaderAndISR(r), nil
	case *kmsg.UpdateMetadataRequest:
		resp := r.ResponseKind().(*kmsg.UpdateMetadataResponse)
		if b.staleBrokerEpoch(r.BrokerEpoch) {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return resp, nil
		}
		if !b.fence.admit(r.ControllerEpoch) {
			resp.ErrorCode = kerr.StaleControllerEpoch.Code
			return resp, nil
		}
		if deleted := b.meta.apply(r); len(deleted) > 0 {
			// Kafka drops the committed offsets of deleted topics.
			b.groups.OnTopicsDeleted(deleted...)
			for _, t := range deleted {
				b.topics.forget(t)
				b.metrics.Topics.Remove(t)
			}
		}
		return resp, nil
	case *kmsg.StopReplicaRequest:
		if b.staleBrokerEpoch(r.BrokerEpoch) {
			resp := r.ResponseKind().(*kmsg.StopReplicaResponse)
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return resp, nil
		}
		if !b.fence.admit(r.ControllerEpoch) {
			resp := r.ResponseKind().(*kmsg.StopReplicaResponse)
			resp.ErrorCode = kerr.StaleControllerEpoch.Code
			return resp, nil
		}
		return b.replicas.ApplyStopReplica(r), nil
	}
	return nil, fmt.Errorf("unexpected controller request %s", kmsg.NameForKey(req.Key()))
}

// staleBrokerEpoch reports a control request meant for an earlier
// registration of this broker id (before a restart or a new ZooKeeper
// session): Kafka answers it STALE_BROKER_EPOCH. -1 skips the check.
func (b *Broker) staleBrokerEpoch(epoch int64) bool {
	return epoch != -1 && epoch < b.brokerEpoch.Load()
}
