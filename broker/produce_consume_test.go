package broker

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sent is what a test produced, for comparing with what it reads back.
type sent struct {
	key, value []byte
	headers    []kgo.RecordHeader
	timestamp  time.Time
	partition  int32
	offset     int64
}

// produceN produces n records with keys, values, headers and explicit
// timestamps, round-robin over the topic's partitions, and returns them in
// send order with the partition and offset the broker assigned. With acks=0
// (acked false) the offsets are unknown and stay -1.
func produceN(t *testing.T, cl *kgo.Client, topic string, partitions int32, n int, acked bool) []sent {
	t.Helper()
	ctx := testContext(t)
	out := make([]sent, n)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range n {
		s := sent{
			key:       []byte("key-" + strconv.Itoa(i)),
			value:     bytes.Repeat([]byte{byte(i)}, 100+i%200),
			headers:   []kgo.RecordHeader{{Key: "h", Value: []byte(strconv.Itoa(i))}},
			timestamp: base.Add(time.Duration(i) * time.Millisecond),
			partition: int32(i) % partitions,
			offset:    -1,
		}
		out[i] = s
		r := &kgo.Record{Topic: topic, Partition: s.partition, Key: s.key, Value: s.value, Headers: s.headers, Timestamp: s.timestamp}
		wg.Add(1)
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if acked {
				out[i].offset = r.Offset
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("produce: %v", firstErr)
	}
	return out
}

// consumeAll reads every partition of topic from the start until it has n
// records, and returns them per partition in offset order.
func consumeAll(t *testing.T, addr, topic string, n int) map[int32][]*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testContext(t)
	got := map[int32][]*kgo.Record{}
	total := 0
	for total < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", total, n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r)
			total++
		})
	}
	return got
}

// checkReadBack asserts that every partition holds exactly the records sent
// to it, in send order, at offsets 0, 1, 2, ..., byte for byte.
func checkReadBack(t *testing.T, want []sent, got map[int32][]*kgo.Record) {
	t.Helper()
	byPartition := map[int32][]sent{}
	for _, s := range want {
		byPartition[s.partition] = append(byPartition[s.partition], s)
	}
	for p, ws := range byPartition {
		rs := got[p]
		if len(rs) != len(ws) {
			t.Fatalf("partition %d: read %d records, sent %d", p, len(rs), len(ws))
		}
		for i, r := range rs {
			w := ws[i]
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d", p, i, r.Offset)
			}
			if w.offset >= 0 && w.offset != r.Offset {
				t.Fatalf("partition %d: acknowledged offset %d, read at %d", p, w.offset, r.Offset)
			}
			if !bytes.Equal(r.Key, w.key) || !bytes.Equal(r.Value, w.value) {
				t.Fatalf("partition %d offset %d: key/value differ (key %q, want %q)", p, r.Offset, r.Key, w.key)
			}
			if !r.Timestamp.Equal(w.timestamp) {
				t.Fatalf("partition %d offset %d: timestamp %v, want %v", p, r.Offset, r.Timestamp, w.timestamp)
			}
			if len(r.Headers) != 1 || r.Headers[0].Key != w.headers[0].Key || !bytes.Equal(r.Headers[0].Value, w.headers[0].Value) {
				t.Fatalf("partition %d offset %d: headers %v, want %v", p, r.Offset, r.Headers, w.headers)
			}
		}
	}
	for p := range got {
		if _, ok := byPartition[p]; !ok {
			t.Fatalf("records in partition %d, where none were sent", p)
		}
	}
}

func TestProduceConsumeEveryCodecAndAcks(t *testing.T) {
	tb := startBroker(t, nil)
	codecs := map[string]kgo.CompressionCodec{
		"none":   kgo.NoCompression(),
		"gzip":   kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(),
		"lz4":    kgo.Lz4Compression(),
		"zstd":   kgo.ZstdCompression(),
	}
	acks := map[string]kgo.Acks{"0": kgo.NoAck(), "1": kgo.LeaderAck(), "all": kgo.AllISRAcks()}
	const partitions, records = 12, 100_000
	for cname, codec := range codecs {
		for aname, ack := range acks {
			t.Run(cname+"/acks="+aname, func(t *testing.T) {
				topic := fmt.Sprintf("codec-%s-acks-%s", cname, aname)
				tb.createTopic(topic, partitions, nil)
				opts := []kgo.Opt{kgo.ProducerBatchCompression(codec), kgo.RequiredAcks(ack), kgo.RecordPartitioner(kgo.ManualPartitioner())}
				if aname != "all" {
					opts = append(opts, kgo.DisableIdempotentWrite())
				}
				want := produceN(t, tb.client(opts...), topic, partitions, records, aname != "0")
				checkReadBack(t, want, consumeAll(t, tb.addr, topic, records))
			})
		}
	}
}

func TestRecordsSurviveCleanRestart(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("restart", 3, nil)
	want := produceN(t, tb.client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "restart", 3, 3000, true)
	tb.restart()
	checkReadBack(t, want, consumeAll(t, tb.addr, "restart", len(want)))
	// The restarted broker keeps assigning offsets after the old ones.
	more := produceN(t, tb.client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "restart", 3, 30, true)
	for _, s := range more {
		if s.offset < 1000 {
			t.Fatalf("offset %d reassigned after restart", s.offset)
		}
	}
}
