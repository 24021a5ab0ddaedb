package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/replica"
)

// replicationCluster is what replica needs of the cluster: requests to
// other brokers' inter-broker listeners (follower fetches) and ISR changes
// to the active controller, which may be this broker's own.
type replicationCluster struct{ b *Broker }

var _ replica.Cluster = replicationCluster{}

// errNoController means no controller is active (an election is under way).
var errNoController = errors.New("broker: no active controller")

func (c replicationCluster) Request(ctx context.Context, id int32, purpose string, req kmsg.Request) (kmsg.Response, error) {
	return c.b.peers.Request(ctx, id, purpose, req)
}

func (c replicationCluster) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	if h := c.b.alterPartitionTestHook; h != nil {
		return h(ctx, req, c.sendAlterPartition)
	}
	return c.sendAlterPartition(ctx, req)
}

// alterPartitionSend is the seam alterPartitionTestHook wraps.
type alterPartitionSend func(context.Context, *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)

// sendAlterPartition sends req to the active controller.
func (c replicationCluster) sendAlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	b := c.b
	req.BrokerEpoch = b.brokerEpoch.Load()
	switch id := b.ctrl.ActiveID(); {
	case id == b.cfg.BrokerID:
		return b.ctrl.AlterPartition(ctx, req)
	case id >= 0:
		resp, err := b.peers.Request(ctx, id, "alterpartition", req)
		if err != nil {
			return nil, err
		}
		return resp.(*kmsg.AlterPartitionResponse), nil
	}
	return nil, errNoController
}
