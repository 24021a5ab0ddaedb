package interop

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// openTxnID is the transactional id of the transaction a broker is killed
// with, open: a second id, so that the rounds' own transactions do not end
// it.
const openTxnID = "interop-open"

// openTxnClient is a transactional producer that began a transaction on
// topicTxn and never ends it.
type openTxnClient struct {
	*kgo.Client
	first int64 // the offset of its first record
}

// openTxn begins a transaction of three records on topicTxn and leaves it
// open, with a transaction timeout far beyond the test's run, so that
// only the abort the test asks for ends it.
func openTxn(t *testing.T, addr string, round int) *openTxnClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := testutil.Client(t, addr, kgo.TransactionalID(openTxnID), kgo.TransactionTimeout(10*time.Minute), kgo.DefaultProduceTopic(topicTxn))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin the open transaction: %v", err)
	}
	o := &openTxnClient{Client: cl, first: -1}
	for j := range 3 {
		r := &kgo.Record{Key: fmt.Appendf(nil, "r%d-open-%d", round, j), Value: []byte("open")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce in the open transaction: %v", err)
		}
		if o.first < 0 {
			o.first = r.Offset
		}
	}
	return o
}

// checkOpen checks what who serves of topicTxn while the transaction is
// open: the last stable offset at its first record, and its producer
// listed with that offset as its open transaction's start.
func (o *openTxnClient) checkOpen(t *testing.T, who string, v partitionView) {
	t.Helper()
	if v.LastStable != o.first || v.HighWatermark <= o.first {
		t.Errorf("%s, a transaction open from offset %d: last stable offset %d, high watermark %d", who, o.first, v.LastStable, v.HighWatermark)
	}
	if !slices.ContainsFunc(v.Producers, func(p producerView) bool { return p.CurrentTxnStartOffset == o.first }) {
		t.Errorf("%s: no producer with a transaction open at %d: %+v", who, o.first, v.Producers)
	}
}

// abortOpen ends the transaction a killed broker left open, from the
// broker now at addr: an InitProducerId for its transactional id makes
// this broker's transaction coordinator, which loaded the other's
// __transaction_state, abort it (markers written by this broker, as
// partition leader). The transaction must then be listed aborted and the
// last stable offset reach the high watermark. A transaction committed
// next by the same id checks that the coordinator carries on with the
// bumped epoch; its key is appended to committed, which a read_committed
// consumer must then get exactly.
func abortOpen(t *testing.T, cl *kgo.Client, addr, who string, committed []string, first int64) []string {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := kmsg.NewPtrInitProducerIDRequest()
		id := openTxnID
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = 60000
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		return err // CONCURRENT_TRANSACTIONS while the abort completes
	})
	testutil.Eventually(t, 60*time.Second, func() error {
		v, err := readView(cl, topicTxn)
		if err != nil {
			return err
		}
		if v.LastStable != v.HighWatermark {
			return fmt.Errorf("last stable offset %d, high watermark %d", v.LastStable, v.HighWatermark)
		}
		if !slices.ContainsFunc(v.Aborted, func(a abortedTxn) bool { return a.FirstOffset == first }) {
			return fmt.Errorf("the transaction open from %d is not among the aborted %v", first, v.Aborted)
		}
		return nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := testutil.Client(t, addr, kgo.TransactionalID(openTxnID), kgo.DefaultProduceTopic(topicTxn))
	defer tc.Close()
	key := fmt.Sprintf("after-open-%d", first)
	if err := tc.BeginTransaction(); err != nil {
		t.Fatalf("%s: begin after the abort: %v", who, err)
	}
	if err := tc.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("%s: produce after the abort: %v", who, err)
	}
	if err := tc.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("%s: commit after the abort: %v", who, err)
	}
	committed = append(committed, key)
	if got := committedKeys(t, cl, addr); !slices.Equal(got, committed) {
		t.Errorf("%s: after the open transaction's abort, read_committed %s has keys\n  %v\nwant\n  %v", who, topicTxn, got, committed)
	}
	return committed
}
