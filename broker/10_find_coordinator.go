package broker

// FindCoordinator, key 10, versions 0-5.
//
// v1 adds key_type (0 group, 1 transaction) and error messages, v3 is
// flexible, v4 batches keys (coordinator_keys) with one answer per key. v6
// (share groups) is not served.
//
// A group's coordinator is the leader of its __consumer_offsets partition,
// a transactional id's the leader of its __transaction_state partition
// (abs(hashCode(key)) % partitions for both). The first lookup of a kind
// creates its topic, as Kafka does, and answers COORDINATOR_NOT_AVAILABLE
// until its partitions have leaders; clients retry.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

func (b *Broker) handleFindCoordinator(ctx context.Context, r *request, req *kmsg.FindCoordinatorRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	for _, key := range keys {
		c := b.authorizeCoordinatorKey(r, req.CoordinatorType, key)
		if c.ErrorCode == 0 {
			c = b.findCoordinator(ctx, r.listener, req.CoordinatorType, key)
		}
		if req.Version < 4 {
			resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
			resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
			break
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return respond(resp)
}

func (b *Broker) findCoordinator(ctx context.Context, listener string, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Port = key, -1, -1
	fail := func(err *kerr.Error, msg string) kmsg.FindCoordinatorResponseCoordinator {
		c.ErrorCode = err.Code
		c.ErrorMessage = &msg
		return c
	}
	var topic string
	var partition int32
	switch keyType {
	case coordinatorGroup:
		topic, partition = consumerOffsetsTopic, b.groups.PartitionFor(key)
	case coordinatorTransaction:
		topic, partition = transactionStateTopic, b.txns.PartitionFor(key)
	default:
		return fail(kerr.InvalidRequest, "unknown coordinator key type")
	}
	ps, ok := b.meta.partition(topic, partition)
	if !ok {
		if keyType == coordinatorGroup {
			b.ensureOffsetsTopic(ctx)
		} else {
			b.ensureTransactionStateTopic(ctx)
		}
		return fail(kerr.CoordinatorNotAvailable, topic+" is being created")
	}
	for _, ep := range b.meta.liveBrokers(listener) {
		if ep.id == ps.Leader {
			c.NodeID, c.Host, c.Port = ep.id, ep.host, ep.port
			return c
		}
	}
	return fail(kerr.CoordinatorNotAvailable, "the coordinator's partition has no leader right now")
}
