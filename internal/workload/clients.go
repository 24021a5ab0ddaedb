package workload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// writeInterval paces the writer: one record per partition per tick,
// light enough for a shared 2-core machine, steady enough that every fault
// lands on records in flight.
const writeInterval = 40 * time.Millisecond

// Writer produces seq 0, 1, 2, ... to every partition with an
// idempotent acks=all producer that retries forever, and records which
// seqs were acknowledged at which offsets.
type Writer struct {
	cl     *kgo.Client
	topic  string
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	produced map[int32]int           // next seq per partition
	acked    map[int32]map[int64]int // offset -> seq
	failed   map[int32]int           // records that got an error
	skipped  int                     // records not sent: buffer full
	errs     map[string]int          // error text -> count
}

func StartWriter(t testing.TB, bootstrap, topic string, partitions int32) *Writer {
	cl := Producer(t, bootstrap)
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{cl: cl, topic: topic, cancel: cancel, done: make(chan struct{}),
		produced: map[int32]int{}, acked: map[int32]map[int64]int{}, failed: map[int32]int{}, errs: map[string]int{}}
	for p := range partitions {
		w.acked[p] = map[int64]int{}
	}
	go w.run(ctx, partitions)
	t.Cleanup(w.StopWriting)
	return w
}

func (w *Writer) run(ctx context.Context, partitions int32) {
	defer close(w.done)
	tick := time.NewTicker(writeInterval)
	defer tick.Stop()
	for {
		for p := range partitions {
			w.mu.Lock()
			seq := w.produced[p]
			w.produced[p]++
			w.mu.Unlock()
			r := &kgo.Record{Topic: w.topic, Partition: p, Value: SeqValue(p, seq)}
			// TryProduce never blocks: while the cluster is stuck and the
			// buffer full, records are skipped (a gap in the seqs), and the
			// records already buffered keep their background context, so
			// that stopping the writer does not fail them.
			w.cl.TryProduce(context.Background(), r, func(r *kgo.Record, err error) { w.result(r, seq, err) })
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (w *Writer) result(r *kgo.Record, seq int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errors.Is(err, kgo.ErrMaxBuffered) {
		w.skipped++
		return
	}
	if err != nil {
		w.failed[r.Partition]++
		w.errs[err.Error()]++
		return
	}
	w.acked[r.Partition][r.Offset] = seq
}

// StopWriting stops producing new records; those in flight carry on.
func (w *Writer) StopWriting() {
	w.cancel()
	<-w.done
}

// Finish stops writing and waits until every record sent has an outcome.
func (w *Writer) Finish(t testing.TB, timeout time.Duration) {
	t.Helper()
	w.StopWriting()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := w.cl.Flush(ctx); err != nil {
		t.Fatalf("writer: records still unacknowledged %v after every broker came back: %v", timeout, err)
	}
}

// Reader consumes every partition (read_committed) for the whole run
// and remembers each record it saw by offset, so that the final log can
// prove none of them disappeared or changed.
type Reader struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	seen    map[int32]map[int64]string
	records int
	changed []string // offsets read twice with different values
}

func StartReader(t testing.TB, bootstrap, topic string, partitions int32) *Reader {
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	opts := append(ClientLog(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(500*time.Millisecond))
	cl := testutil.Client(t, bootstrap, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	r := &Reader{cancel: cancel, done: make(chan struct{}), seen: map[int32]map[int64]string{}}
	for p := range partitions {
		r.seen[p] = map[int64]string{}
	}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(r.add)
		}
	}()
	t.Cleanup(r.Stop)
	return r
}

func (r *Reader) add(rec *kgo.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records++
	v := string(rec.Value)
	if old, ok := r.seen[rec.Partition][rec.Offset]; ok && old != v {
		r.changed = append(r.changed, fmt.Sprintf("%s-%d offset %d: read %q, later %q", rec.Topic, rec.Partition, rec.Offset, old, v))
	}
	r.seen[rec.Partition][rec.Offset] = v
}

// Stop ends the reader.
func (r *Reader) Stop() {
	r.cancel()
	<-r.done
}

// LogEntry is one record of the final log.
type LogEntry struct {
	Offset int64
	Value  string
}

// ReadFinal reads every partition read_committed from its log start to
// its end offset (the high watermark) with a new consumer and returns the
// data records. It keeps control records to know where it is: after a
// transaction the last offset of a partition is a marker, not data.
func ReadFinal(t testing.TB, bootstrap, topic string, partitions int32, timeout time.Duration) map[int32][]LogEntry {
	t.Helper()
	adm := kadm.NewClient(testutil.Client(t, bootstrap))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	end := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { end[o.Partition] = o.Offset })
	if len(end) != int(partitions) {
		t.Fatalf("end offsets for %d partitions of %s, want %d", len(end), topic, partitions)
	}

	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl := testutil.Client(t, bootstrap, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	out := map[int32][]LogEntry{}
	next := map[int32]int64{}
	complete := func() bool {
		for p := range partitions {
			if next[p] < end[p] {
				return false
			}
		}
		return true
	}
	for !complete() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s to its end offsets %v within %v: got to %v", topic, end, timeout, next)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < next[r.Partition] || r.Offset >= end[r.Partition] {
				return // a reread after a reset, or beyond the end we check
			}
			next[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out[r.Partition] = append(out[r.Partition], LogEntry{r.Offset, string(r.Value)})
			}
		})
	}
	return out
}

// Errors counts the producer's errors by text.
func (w *Writer) Errors() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.errs)
}

// Seen copies, by partition and offset, the values the reader read.
func (r *Reader) Seen() map[int32]map[int64]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[int32]map[int64]string, len(r.seen))
	for p, m := range r.seen {
		out[p] = maps.Clone(m)
	}
	return out
}

// Changed lists the offsets the reader read twice with different values.
func (r *Reader) Changed() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.changed)
}

// Acked is how many records the writer has had acknowledged.
func (w *Writer) Acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.acked {
		n += len(m)
	}
	return n
}

// WaitAcked waits up to timeout until at least n records were
// acknowledged.
func (w *Writer) WaitAcked(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	testutil.Eventually(t, timeout, func() error {
		if got := w.Acked(); got < n {
			return fmt.Errorf("%d records acknowledged, want %d", got, n)
		}
		return nil
	})
}
