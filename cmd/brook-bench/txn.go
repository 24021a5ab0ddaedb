package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// acksTxn is the --acks mode of the transactional workload: an acks=all
// transactional producer that commits every --txn-interval, read back
// read_committed.
const acksTxn = "txn"

// txnCommitter commits the transactional workload's transaction every
// interval, between records, and times each commit.
type txnCommitter struct {
	cl       *kgo.Client
	interval time.Duration
	begun    time.Time
	commits  []time.Duration
}

func newTxnCommitter(cl *kgo.Client, interval time.Duration) (*txnCommitter, error) {
	t := &txnCommitter{cl: cl, interval: interval}
	return t, t.begin()
}

func (t *txnCommitter) begin() error {
	if err := t.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	t.begun = time.Now()
	return nil
}

// maybeCommit commits and begins the next transaction once the current
// one is interval old.
func (t *txnCommitter) maybeCommit(ctx context.Context) error {
	if time.Since(t.begun) < t.interval {
		return nil
	}
	if err := t.commit(ctx); err != nil {
		return err
	}
	return t.begin()
}

// commit is what the Java producer's commitTransaction does: flush every
// record of the transaction, then EndTxn; its time is the commit latency.
func (t *txnCommitter) commit(ctx context.Context) error {
	start := time.Now()
	if err := t.cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush before commit: %w", err)
	}
	if err := t.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	t.commits = append(t.commits, time.Since(start))
	return nil
}

// produceTxn is produceTimed in transactions: a commit every o.txnInterval
// and one at the end, all inside the timing, so that throughput counts
// committed records only. It also returns each commit's latency.
func produceTxn(ctx context.Context, cl *kgo.Client, o options) (throughput, []time.Duration, error) {
	t, err := newTxnCommitter(cl, o.txnInterval)
	if err != nil {
		return throughput{}, nil, err
	}
	tp, err := produceTimed(ctx, cl, o, t)
	return tp, t.commits, err
}

// produceWarmupRecord sends the one untimed record that tells the latency
// consumer it is fetching: in a transaction of its own for acks=txn.
func produceWarmupRecord(ctx context.Context, cl *kgo.Client, o options, acks string) error {
	var t *txnCommitter
	if acks == acksTxn {
		var err error
		if t, err = newTxnCommitter(cl, 0); err != nil {
			return err
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, o.recordSize)}).FirstErr(); err != nil {
		return err
	}
	if t != nil {
		return t.commit(ctx)
	}
	return nil
}
