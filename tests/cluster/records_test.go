package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/internal/workload"
)

// Records in these tests carry "<partition>:<seq>" as their value, so that
// a reader can tell which record it holds, where it belongs and what order
// it was produced in.
func seqValue(partition int32, seq int) []byte { return workload.SeqValue(partition, seq) }

func parseSeqValue(v []byte) (partition int32, seq int, err error) { return workload.ParseSeqValue(v) }

// producer is workload.Producer: idempotent, acks=all, manual partitions.
func producer(t testing.TB, bootstrap string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return workload.Producer(t, bootstrap, opts...)
}

func clientLog() []kgo.Opt { return workload.ClientLog() }

// produceSeqs writes seqs from..from+n-1 to each of partitions of topic
// and waits until all are acknowledged or ctx ends.
func produceSeqs(ctx context.Context, cl *kgo.Client, topic string, partitions int32, from, n int) error {
	var recs []*kgo.Record
	for seq := from; seq < from+n; seq++ {
		for p := range partitions {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: seqValue(p, seq)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce seqs %d..%d to %s: %w", from, from+n-1, topic, err)
	}
	return nil
}

// seqConsumer reads every partition of a topic from the start, in the
// background, and keeps the seqs in log order with their offsets.
type seqConsumer struct {
	topic  string
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	seqs    map[int32][]int
	offsets map[int32][]int64
	bad     []string // records whose value does not belong where it is
}

func startSeqConsumer(t testing.TB, bootstrap, topic string, partitions int32) *seqConsumer {
	t.Helper()
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	opts := append(clientLog(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(500*time.Millisecond))
	cl := testutil.Client(t, bootstrap, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	c := &seqConsumer{topic: topic, cancel: cancel, done: make(chan struct{}),
		seqs: map[int32][]int{}, offsets: map[int32][]int64{}}
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(c.add)
		}
	}()
	t.Cleanup(c.stop)
	return c
}

func (c *seqConsumer) add(r *kgo.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, seq, err := parseSeqValue(r.Value)
	if err != nil || p != r.Partition {
		c.bad = append(c.bad, fmt.Sprintf("%s-%d offset %d: value %q (%v)", r.Topic, r.Partition, r.Offset, r.Value, err))
		return
	}
	c.seqs[p] = append(c.seqs[p], seq)
	c.offsets[p] = append(c.offsets[p], r.Offset)
}

// stop ends the background reads; it is safe to call twice.
func (c *seqConsumer) stop() {
	c.cancel()
	<-c.done
}

// snapshot copies what was read so far.
func (c *seqConsumer) snapshot() (seqs map[int32][]int, bad []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seqs = map[int32][]int{}
	for p, s := range c.seqs {
		seqs[p] = slices.Clone(s)
	}
	return seqs, slices.Clone(c.bad)
}

// waitFor waits until every partition has at least want records and
// returns them.
func (c *seqConsumer) waitFor(t testing.TB, partitions int32, want int, timeout time.Duration) map[int32][]int {
	t.Helper()
	var seqs map[int32][]int
	testutil.Eventually(t, timeout, func() error {
		var bad []string
		seqs, bad = c.snapshot()
		if len(bad) > 0 {
			t.Fatalf("consumer read records that do not belong to %s: %v", c.topic, bad)
		}
		for p := range partitions {
			if len(seqs[p]) < want {
				return fmt.Errorf("%s-%d: read %d records of %d", c.topic, p, len(seqs[p]), want)
			}
		}
		return nil
	})
	return seqs
}

// consumeSeqs reads every partition of topic from the start until each
// holds want records, and returns the seqs in log order.
func consumeSeqs(t testing.TB, bootstrap, topic string, partitions int32, want int, timeout time.Duration) map[int32][]int {
	t.Helper()
	c := startSeqConsumer(t, bootstrap, topic, partitions)
	defer c.stop()
	return c.waitFor(t, partitions, want, timeout)
}

// checkSeqs fails unless every partition holds exactly 0..want-1 in order.
func checkSeqs(t testing.TB, topic string, got map[int32][]int, partitions int32, want int) {
	t.Helper()
	for p := range partitions {
		seqs := got[p]
		for i, seq := range seqs {
			if seq != i {
				t.Errorf("%s-%d: record %d holds seq %d, want %d (seqs %s)", topic, p, i, seq, i, summarize(seqs))
				break
			}
		}
		if len(seqs) != want {
			t.Errorf("%s-%d: %d records, want %d", topic, p, len(seqs), want)
		}
	}
}

// summarize shortens a long seq list for a failure message.
func summarize(seqs []int) string {
	if len(seqs) <= 20 {
		return fmt.Sprint(seqs)
	}
	return fmt.Sprintf("%v ... %v (%d in all)", seqs[:10], seqs[len(seqs)-10:], len(seqs))
}
