package broker

// DescribeTransactions, key 65, version 0 (KIP-664).
//
// Each id is described by its coordinator: ids this broker does not
// coordinate get NOT_COORDINATOR, unknown ids TRANSACTIONAL_ID_NOT_FOUND.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func (b *Broker) handleDescribeTransactions(_ context.Context, r *request, req *kmsg.DescribeTransactionsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		if !b.authorize(r, auth.OpDescribe, auth.ResourceTransactionalID, id) {
			s := kmsg.NewDescribeTransactionsResponseTransactionState()
			s.TransactionalID, s.ErrorCode = id, kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, s)
			continue
		}
		d := b.txns.Describe(id)
		s := kmsg.NewDescribeTransactionsResponseTransactionState()
		s.ErrorCode, s.TransactionalID, s.State = d.Err, id, d.State
		s.TimeoutMillis, s.StartTimestamp = d.TimeoutMs, d.StartTimeMs
		s.ProducerID, s.ProducerEpoch = d.ProducerID, d.ProducerEpoch
		for i := 0; i < len(d.Partitions); {
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic = d.Partitions[i].Topic
			for ; i < len(d.Partitions) && d.Partitions[i].Topic == t.Topic; i++ {
				t.Partitions = append(t.Partitions, d.Partitions[i].Partition)
			}
			s.Topics = append(s.Topics, t)
		}
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return respond(resp)
}
