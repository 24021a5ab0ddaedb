package controller

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AllocateProducerIDs serves AllocateProducerIds: a Kafka broker in
// ZooKeeper mode at inter.broker.protocol.version 3.0 or later asks the
// active controller for its next block of producer ids instead of writing
// /latest_producer_id_block itself. The block comes from the same znode
// Brook's brokers claim theirs from, so every id is handed out once. As
// Kafka's controller, an unknown broker or one whose epoch is not its
// registration's gets STALE_BROKER_EPOCH.
func (c *Controller) AllocateProducerIDs(ctx context.Context, req *kmsg.AllocateProducerIDsRequest) (*kmsg.AllocateProducerIDsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	err := c.call(ctx, func(loopCtx context.Context, active bool) {
		if !active {
			resp.ErrorCode = kerr.NotController.Code
			return
		}
		if b, ok := c.state.Live[req.BrokerID]; !ok || b.Epoch != req.BrokerEpoch {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return
		}
		start, _, err := NextProducerIDBlock(loopCtx, c.st, req.BrokerID, ProducerIDBlockSize)
		if err != nil {
			c.log.Warn("allocate producer ids", "broker", req.BrokerID, "err", err)
			resp.ErrorCode = kerr.UnknownServerError.Code
			return
		}
		resp.ProducerIDStart, resp.ProducerIDLen = start, ProducerIDBlockSize
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}
