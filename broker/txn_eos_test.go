package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupTransactSessionExactlyOnce runs franz-go's read-process-write
// loop (GroupTransactSession: consumed offsets committed with
// TxnOffsetCommit inside the transaction that writes the output) through
// the whole stack: coordinator, markers, transactional offsets and
// read_committed fetch. Each round's offsets must commit (the second
// TxnOffsetCommit of an epoch once looked like a duplicate to the log),
// survive a restart, and the output must hold each input record once.
func TestGroupTransactSessionExactlyOnce(t *testing.T) {
	tb := startBroker(t, map[string]string{"transaction.state.log.num.partitions": "3"})
	tb.createTopic("in", 1, nil)
	tb.createTopic("out", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const inputs = 6
	src := tb.client(kgo.DefaultProduceTopic("in"))
	for range inputs {
		if err := src.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(tb.addr), kgo.TransactionalID("eos"), kgo.ConsumerGroup("eos-g"),
		kgo.ConsumeTopics("in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DefaultProduceTopic("out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	consumed := 0
	for round := 0; consumed < inputs; round++ {
		if round > 20 {
			t.Fatalf("consumed %d of %d records after %d rounds", consumed, inputs, round)
		}
		fs := sess.PollRecords(ctx, 2)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { sess.Produce(ctx, kgo.StringRecord("y:"+string(r.Value)), nil) })
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil || !committed {
			t.Fatalf("round %d: committed %v, %v", round, committed, err)
		}
		consumed += fs.NumRecords()
	}
	sess.Close()

	check := func(when string) {
		t.Helper()
		offs, err := kadm.NewClient(tb.client()).FetchOffsets(ctx, "eos-g")
		if err != nil {
			t.Fatalf("%s: fetch offsets: %v", when, err)
		}
		if o, _ := offs.Lookup("in", 0); o.At != inputs {
			t.Fatalf("%s: committed offset %d, want %d", when, o.At, inputs)
		}
		out := tb.client(kgo.ConsumeTopics("out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got := 0
		for got < inputs {
			fs := out.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatalf("%s: read output after %d: %v", when, got, err)
			}
			got += fs.NumRecords()
		}
		if got != inputs {
			t.Fatalf("%s: %d output records, want %d", when, got, inputs)
		}
		// Nothing past the committed output: the end offsets at
		// read_committed count only the records and their markers.
		ends, err := kadm.NewClient(tb.client()).ListCommittedOffsets(ctx, "out")
		if err != nil {
			t.Fatalf("%s: list offsets: %v", when, err)
		}
		if e, _ := ends.Lookup("out", 0); e.Offset < inputs {
			t.Fatalf("%s: output ends at %d, below %d records", when, e.Offset, inputs)
		}
	}
	check("before restart")
	tb.restart()
	readyCoordinator(t, tb, "eos-g")
	check("after restart")
}
