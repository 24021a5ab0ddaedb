package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestTV2AcrossBrokers: franz-go, which speaks transaction version 2 when
// the brokers finalize it, runs committed and aborted transactions over a
// topic whose partitions are led by all three brokers, so that leaders add
// partitions through a transaction coordinator on another broker and
// markers v2 travel between brokers. A read_committed consumer sees the
// committed records only, and the producer's epoch grew per transaction.
func TestTV2AcrossBrokers(t *testing.T) {
	c := startReplCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client())
	testutil.Eventually(t, 30*time.Second, func() error {
		bs, err := adm.ListBrokers(ctx)
		if err != nil || len(bs) != 3 {
			return fmt.Errorf("brokers %v: %v", bs, err)
		}
		return nil
	})
	const topic, partitions, perTxn, txns = "tv2c", 6, 12, 4
	testutil.Eventually(t, 30*time.Second, func() error {
		r, err := adm.CreateTopic(ctx, partitions, 3, nil, topic)
		if err == nil && r.Err != nil && !strings.Contains(r.Err.Error(), "TOPIC_ALREADY_EXISTS") {
			err = r.Err
		}
		return err
	})
	// Each broker finalizes transaction.version 2 once it has seen that
	// the others serve it; a client connected before would keep version 1.
	testutil.Eventually(t, 30*time.Second, func() error {
		for id, tb := range c.brokers {
			if !finalizedTV(tb) {
				return fmt.Errorf("broker %d does not finalize transaction.version 2 yet", id)
			}
		}
		return nil
	})
	p := c.client(kgo.TransactionalID("tv2c-tx"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.TransactionTimeout(30*time.Second))
	for i := range txns {
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("begin %d: %v", i, err)
		}
		for j := range perTxn {
			r := &kgo.Record{Value: fmt.Appendf(nil, "%d-%d", i, j)}
			if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %d-%d: %v", i, j, err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(i%2 == 0)); err != nil {
			t.Fatalf("end %d: %v", i, err)
		}
	}
	described, err := adm.DescribeTransactions(ctx, "tv2c-tx")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["tv2c-tx"]; d.Err != nil || d.ProducerEpoch < txns {
		t.Fatalf("transaction %+v: want an epoch of at least %d (one bump per EndTxn)", d, txns)
	}

	cons := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]bool{}
	for len(seen) < txns/2*perTxn {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d committed records: %v", len(seen), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if n := v[0] - '0'; n%2 != 0 {
				t.Fatalf("read %s of an aborted transaction at read_committed", v)
			}
			if seen[v] {
				t.Fatalf("read %s twice", v)
			}
			seen[v] = true
		})
	}
}
