package broker

// InitProducerId, key 22, versions 0-5.
//
// For an idempotent producer (no transactional id) Kafka hands out a fresh
// producer id with epoch 0 on every call, from a block of ids this broker
// reserved in the metadata store (/latest_producer_id_block), so that ids
// are unique across the cluster. v3+ may carry the producer's current id and
// epoch (KIP-360); for idempotent producers Kafka still allocates a new id.
//
// With a transactional id the request goes to the id's transaction
// coordinator (txn/), which keeps the producer id and bumps its epoch,
// fencing older producers of the same id. v4 introduced PRODUCER_FENCED;
// older versions get INVALID_PRODUCER_EPOCH instead, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleInitProducerID(ctx context.Context, r *request, req *kmsg.InitProducerIDRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		return reply{wait: func() kmsg.Response {
			r := b.txns.InitProducerID(ctx, *req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch)
			resp.ErrorCode = fencedForVersion(r.Err, req.Version, 4)
			resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch
			return resp
		}}, nil
	}
	id, err := b.producerIDs.next(ctx)
	if err != nil {
		b.logger.Warn("allocate producer id", "err", err)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return respond(resp)
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return respond(resp)
}
