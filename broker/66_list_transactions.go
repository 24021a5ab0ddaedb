package broker

// ListTransactions, key 66, versions 0-1 (KIP-664).
//
// Lists the transactional ids this broker coordinates, filtered by state
// and producer id; v1 adds duration_filter (KIP-994): only transactions
// running longer than that many milliseconds. State filters Kafka does not
// know are echoed in unknown_state_filters. v2 (a transactional id
// pattern) is not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/txn"
)

func (b *Broker) handleListTransactions(_ context.Context, r *request, req *kmsg.ListTransactionsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := txn.ListFilter{ProducerIDs: req.ProducerIDFilters, MinDurationMs: -1}
	if req.Version >= 1 {
		f.MinDurationMs = req.DurationFilterMillis
	}
	for _, name := range req.StateFilters {
		if s, ok := txn.StateByName(name); ok {
			f.States = append(f.States, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if len(req.StateFilters) > 0 && len(f.States) == 0 {
		// Only unknown states asked for: nothing matches.
		return respond(resp)
	}
	listed, code := b.txns.List(f)
	resp.ErrorCode = code
	for _, l := range listed {
		if !b.authorize(r, auth.OpDescribe, auth.ResourceTransactionalID, l.TransactionalID) {
			continue // Kafka lists only the describable ones
		}
		s := kmsg.NewListTransactionsResponseTransactionState()
		s.TransactionalID, s.ProducerID, s.TransactionState = l.TransactionalID, l.ProducerID, l.State
		resp.TransactionStates = append(resp.TransactionStates, s)
	}
	return respond(resp)
}
