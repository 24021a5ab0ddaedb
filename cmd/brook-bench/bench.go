package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// timestampBytes is the size of the send time (UnixNano, big endian) that
// starts every record value; a zero time marks the warm-up record.
const timestampBytes = 8

// warmupTimeout bounds the wait for the latency consumer to see the first
// record, i.e. to have its fetches running before the timed records start.
const warmupTimeout = 30 * time.Second

// acksZeroGrace is how long the latency consumer may keep waiting for
// acks=0 records after the producer finished sending them.
const acksZeroGrace = 10 * time.Second

func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

func producerOpts(o options, acks string) ([]kgo.Opt, error) {
	c, err := codec(o.compression)
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.ProducerLinger(o.linger),
		kgo.ProducerBatchMaxBytes(int32(o.batchBytes)),
		kgo.ProducerBatchCompression(c),
	}
	switch acks {
	case "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case acksTxn:
		// A new transactional id per run: nothing to fence or recover.
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.TransactionalID(fmt.Sprintf("brook-bench-%d", time.Now().UnixNano())))
	case "1", "0":
		// franz-go's idempotent producer requires acks=all. Without it
		// franz-go defaults to one produce request in flight per broker;
		// allow five, as the Java producer and idempotent franz-go do.
		ack := kgo.LeaderAck()
		if acks == "0" {
			ack = kgo.NoAck()
		}
		opts = append(opts, kgo.RequiredAcks(ack), kgo.DisableIdempotentWrite(),
			kgo.MaxProduceRequestsInflightPerBroker(5))
	default:
		return nil, fmt.Errorf("acks %q", acks)
	}
	return opts, nil
}

// benchOnce creates a fresh topic, produces o.records while a consumer
// measures end-to-end latency, then reads the topic again from the start
// to measure consume throughput.
func benchOnce(ctx context.Context, o options, seeds []string, acks string) (result, error) {
	res := result{acks: acks, recordSize: o.recordSize}
	topic := fmt.Sprintf("brook-bench-acks-%s-%d", acks, time.Now().UnixNano())
	if err := createTopic(ctx, seeds, topic, o.partitions, o.replicationFactor, o.clientOpts...); err != nil {
		return res, err
	}

	popts, err := producerOpts(o, acks)
	if err != nil {
		return res, err
	}
	producer, err := kgo.NewClient(append(append(popts, o.clientOpts...), kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		return res, fmt.Errorf("producer client: %w", err)
	}
	defer producer.Close()

	if o.produceOnly {
		res.note = "produce only: no latency consumer, no consume pass"
		res.produceOnly = true
		if acks == acksTxn {
			res.produce, res.commits, err = produceTxn(ctx, producer, o)
		} else {
			res.produce, err = produceTimed(ctx, producer, o, nil)
		}
		return res, err
	}

	latCtx, stopLatency := context.WithCancel(ctx)
	defer stopLatency()
	lat := newLatencyConsumer(o.records)
	latDone := make(chan error, 1)
	go func() { latDone <- lat.run(latCtx, seeds, topic, o.fetchMaxWait, acks == acksTxn, o.clientOpts...) }()

	// The warm-up record (send time 0) proves the consumer is fetching, so
	// the timed records do not include its start-up.
	if err := produceWarmupRecord(ctx, producer, o, acks); err != nil {
		return res, fmt.Errorf("produce warm-up record: %w", err)
	}
	warm := time.NewTimer(warmupTimeout)
	defer warm.Stop()
	select {
	case <-lat.warmedUp:
	case err := <-latDone:
		return res, fmt.Errorf("latency consumer: %w", err)
	case <-warm.C:
		return res, fmt.Errorf("latency consumer did not see the warm-up record within %v", warmupTimeout)
	case <-ctx.Done():
		return res, ctx.Err()
	}

	if acks == acksTxn {
		res.produce, res.commits, err = produceTxn(ctx, producer, o)
	} else {
		res.produce, err = produceTimed(ctx, producer, o, nil)
	}
	if err != nil {
		return res, err
	}
	if acks == "0" {
		// Nothing confirms acks=0 writes, so lost records would keep the
		// consumer waiting: give it a grace period, then take what arrived.
		res.note = "acks=0: latency and consume cover only the records that reached the log"
		grace := time.AfterFunc(acksZeroGrace, stopLatency)
		defer grace.Stop()
	}
	if err := <-latDone; err != nil && !(acks == "0" && errors.Is(err, context.Canceled)) {
		return res, fmt.Errorf("latency consumer: %w", err)
	}
	res.latencies = lat.latencies

	// The topic holds the timed records and the warm-up record.
	records := len(res.latencies) + 1
	passes := o.passes
	if len(passes) == 0 {
		passes = []consumePass{{clientFranzGo, 1}}
	}
	for i, pass := range passes {
		pr, err := measurePass(ctx, o, pass, seeds, topic, records, acks == acksTxn)
		if err != nil {
			return res, fmt.Errorf("consume pass %v: %w", pass, err)
		}
		if i == 0 {
			res.consume = pr.tp
		}
		res.passes = append(res.passes, pr)
	}
	return res, nil
}

// measurePass runs one consume pass and notes the broker's CPU time over
// it, when o.brokerCPU can read it.
func measurePass(ctx context.Context, o options, pass consumePass, seeds []string, topic string, records int, readCommitted bool) (passResult, error) {
	pr := passResult{pass: pass}
	var before cpuTimes
	if o.brokerCPU != nil {
		var err error
		if before, err = o.brokerCPU(); err != nil {
			return pr, err
		}
	}
	tp, err := runConsumePass(ctx, o, pass, seeds, topic, records, readCommitted)
	if err != nil {
		return pr, err
	}
	pr.tp = tp
	if o.brokerCPU != nil {
		after, err := o.brokerCPU()
		if err != nil {
			return pr, err
		}
		pr.brokerCPU = after.sub(before)
	}
	return pr, nil
}

func createTopic(ctx context.Context, seeds []string, topic string, partitions, rf int, opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(seeds...))...)
	if err != nil {
		return fmt.Errorf("admin client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, int32(partitions), int16(rf), nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// produceTimed sends o.records records, each stamped with its send time,
// and waits for all acknowledgements. At most o.maxInflight records are
// unacknowledged at once, and a record is stamped only once it has a slot,
// so its latency includes bounded client queueing rather than the whole
// backlog. Throughput counts value bytes, as Kafka's producer perf tool does.
//
// With txn (the transactional workload) it commits every txn.interval
// between records, and once more at the end, inside the timing.
func produceTimed(ctx context.Context, cl *kgo.Client, o options, txn *txnCommitter) (throughput, error) {
	var (
		wg       sync.WaitGroup
		failures atomic.Int64
		firstErr error
		errOnce  sync.Once
	)
	slots := make(chan struct{}, o.maxInflight)
	var interval time.Duration
	if o.rate > 0 {
		interval = time.Second / time.Duration(o.rate)
	}
	start := time.Now()
	for i := 0; i < o.records; i++ {
		if interval > 0 {
			if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
				if err := pause(ctx, wait); err != nil {
					return throughput{}, err
				}
			}
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return throughput{}, ctx.Err()
		}
		if txn != nil {
			if err := txn.maybeCommit(ctx); err != nil {
				return throughput{}, err
			}
		}
		value := make([]byte, o.recordSize)
		binary.BigEndian.PutUint64(value, uint64(time.Now().UnixNano()))
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			<-slots
			if err != nil {
				failures.Add(1)
				errOnce.Do(func() { firstErr = err })
			}
		})
	}
	wg.Wait()
	if txn != nil && failures.Load() == 0 {
		if err := txn.commit(ctx); err != nil {
			return throughput{}, err
		}
	}
	elapsed := time.Since(start)
	if f := failures.Load(); f > 0 {
		return throughput{}, fmt.Errorf("%d of %d records failed to produce, first: %w", f, o.records, firstErr)
	}
	return throughput{records: o.records, bytes: int64(o.records) * int64(o.recordSize), elapsed: elapsed}, nil
}

// pause waits d, or until ctx ends; it paces --rate.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// latencyConsumer reads the topic while it is produced and records, per
// timed record, the time from its send to its arrival here.
type latencyConsumer struct {
	want      int
	latencies []time.Duration
	warmedUp  chan struct{}
}

func newLatencyConsumer(want int) *latencyConsumer {
	return &latencyConsumer{want: want, latencies: make([]time.Duration, 0, want), warmedUp: make(chan struct{})}
}

func (c *latencyConsumer) run(ctx context.Context, seeds []string, topic string, maxWait time.Duration, readCommitted bool, opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(consumerOpts(seeds, topic, readCommitted, append([]kgo.Opt{kgo.FetchMaxWait(maxWait)}, opts...)...)...)
	if err != nil {
		return fmt.Errorf("consumer client: %w", err)
	}
	defer cl.Close()
	warm := false
	for len(c.latencies) < c.want {
		fetches := cl.PollFetches(ctx)
		now := time.Now()
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fetchesErr(fetches); err != nil {
			return err
		}
		for it := fetches.RecordIter(); !it.Done(); {
			r := it.Next()
			if len(r.Value) < timestampBytes {
				return fmt.Errorf("record at %s/%d offset %d has a %d-byte value", r.Topic, r.Partition, r.Offset, len(r.Value))
			}
			sent := int64(binary.BigEndian.Uint64(r.Value))
			if sent == 0 {
				if !warm {
					warm = true
					close(c.warmedUp)
				}
				continue
			}
			c.latencies = append(c.latencies, now.Sub(time.Unix(0, sent)))
		}
	}
	return nil
}

// fetchCounter counts Fetch responses and their bytes, to show how much a
// broker returns per fetch (fewer, larger responses cost fewer round trips),
// and the batches and records the client decoded from them, so that two
// servers' answers to the same consumer can be compared shape for shape.
type fetchCounter struct {
	responses atomic.Int64
	bytes     atomic.Int64
	batches   atomic.Int64
	records   atomic.Int64
}

func (f *fetchCounter) OnFetchBatchRead(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.FetchBatchMetrics) {
	f.batches.Add(1)
	f.records.Add(int64(m.NumRecords))
}

func (f *fetchCounter) OnBrokerRead(_ kgo.BrokerMetadata, key int16, bytesRead int, _, _ time.Duration, err error) {
	if key == 1 && err == nil {
		f.responses.Add(1)
		f.bytes.Add(int64(bytesRead))
	}
}

// consumerOpts is a consumer of topic from its start, read_committed for
// the transactional workload (the reads an application of it would do).
func consumerOpts(seeds []string, topic string, readCommitted bool, extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}
	if readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	return append(opts, extra...)
}

// consumeAll reads want records from the start of the topic with a new
// client, as fast as the broker serves them.
func consumeAll(ctx context.Context, seeds []string, topic string, want int, readCommitted bool, opts ...kgo.Opt) (throughput, error) {
	start := time.Now()
	cpuStart := selfCPU()
	var fc fetchCounter
	cl, err := kgo.NewClient(consumerOpts(seeds, topic, readCommitted, append([]kgo.Opt{kgo.WithHooks(&fc)}, opts...)...)...)
	if err != nil {
		return throughput{}, fmt.Errorf("consumer client: %w", err)
	}
	defer cl.Close()
	var got int
	var bytes int64
	for got < want {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return throughput{}, fmt.Errorf("consume pass after %d of %d records: %w", got, want, err)
		}
		if err := fetchesErr(fetches); err != nil {
			return throughput{}, err
		}
		fetches.EachRecord(func(r *kgo.Record) {
			got++
			bytes += int64(len(r.Value))
		})
	}
	return throughput{records: got, bytes: bytes, elapsed: time.Since(start),
		fetches: fc.responses.Load(), fetchBytes: fc.bytes.Load(),
		fetchBatches: fc.batches.Load(), fetchRecords: fc.records.Load(), clientCPU: selfCPU() - cpuStart}, nil
}

// selfCPU is this process's CPU time (user + system) so far; 0 if the
// kernel does not say. Around the consume pass, when the producer and the
// latency consumer are done, it is the consuming client's cost: near the
// pass's wall time means the client, not the broker, set the pace.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fetchesErr(fetches kgo.Fetches) error {
	var errs []error
	fetches.EachError(func(topic string, partition int32, err error) {
		errs = append(errs, fmt.Errorf("fetch %s/%d: %w", topic, partition, err))
	})
	return errors.Join(errs...)
}
