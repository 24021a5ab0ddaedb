package broker

// InitProducerId, key 22, versions 0-5.
//
// For an idempotent producer (no transactional id) Kafka hands out a fresh
// producer id with epoch 0 on every call, from a block of ids this broker
// reserved in the metadata store (/latest_producer_id_block), so that ids
// are unique across the cluster. v3+ may carry the producer's current id and
// epoch (KIP-360); for idempotent producers Kafka still allocates a new id.
//
// Transactions are not implemented yet: a transactional id is refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a non-retriable error that stock
// producers surface at once instead of retrying forever.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleInitProducerID(ctx context.Context, _ *request, req *kmsg.InitProducerIDRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return respond(resp)
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
