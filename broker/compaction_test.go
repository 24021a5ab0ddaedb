package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/log"
)

// TestCompactedTopicShrinks produces many overwrites of a few keys to a
// compacted topic with small segments: the log cleaner shrinks the log,
// and a consumer reading from the start gets the latest value of every key
// with strictly increasing offsets.
func TestCompactedTopicShrinks(t *testing.T) {
	tb := startBroker(t, map[string]string{"log.cleaner.backoff.ms": "10"})
	segment, compact := "8192", "compact"
	tb.createTopic("compacted", 1, map[string]*string{"cleanup.policy": &compact, "segment.bytes": &segment})
	ctx := testContext(t)
	cl := tb.client(kgo.DefaultProduceTopic("compacted"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()))
	latest := map[string]string{}
	produced := 0 // bytes of keys and values
	const n, keys = 2000, 8
	for i := 0; i < n; i += 20 {
		var recs []*kgo.Record
		for j := i; j < i+20; j++ {
			k, v := fmt.Sprint("key", j%keys), fmt.Sprint("value-", j, strings.Repeat("x", 100))
			latest[k] = v
			produced += len(k) + len(v)
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte(v)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	l := tb.b.logs.Get(log.TopicPartition{Topic: "compacted", Partition: 0})
	testutil.Eventually(t, time.Minute, func() error {
		if size := l.Size(); size > int64(produced/4) {
			return fmt.Errorf("log holds %d bytes of %d produced", size, produced)
		}
		return nil
	})
	end := l.LogEndOffset()
	consumer := tb.client(kgo.ConsumeTopics("compacted"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[string]string{}
	last, count := int64(-1), 0
	for last < end-1 {
		fs := consumer.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed up to offset %d of %d: %v", last, end, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= last {
				t.Fatalf("offset %d after %d", r.Offset, last)
			}
			last = r.Offset
			got[string(r.Key)] = string(r.Value)
			count++
		})
	}
	for k, v := range latest {
		if got[k] != v {
			t.Fatalf("key %s: consumed %.20q, latest produced %.20q", k, got[k], v)
		}
	}
	if count >= n/4 {
		t.Fatalf("consumed %d of %d records produced: the topic was not compacted", count, n)
	}
	t.Logf("%d bytes produced, log of %d bytes; %d records consumed of %d produced", produced, l.Size(), count, n)
}

// TestConsumerOffsetsCompacted commits the offsets of one group many times:
// __consumer_offsets (compacted) shrinks to about one record per group and
// partition, and after a restart the coordinator, loading the compacted
// log, returns the last commits.
func TestConsumerOffsetsCompacted(t *testing.T) {
	tb := startBroker(t, map[string]string{
		"log.cleaner.backoff.ms": "10", "offsets.topic.segment.bytes": "4096", "offsets.topic.num.partitions": "1",
	})
	tb.createTopic("data", 2, nil)
	ctx := testContext(t)
	adm := tb.admin()
	const commits = 300
	for i := 1; i <= commits; i++ {
		o := kadm.Offsets{}
		o.Add(kadm.Offset{Topic: "data", Partition: 0, At: int64(i)})
		o.Add(kadm.Offset{Topic: "data", Partition: 1, At: int64(2 * i)})
		resp, err := adm.CommitOffsets(ctx, "g", o)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	l := tb.b.logs.Get(log.TopicPartition{Topic: "__consumer_offsets", Partition: 0})
	if l == nil {
		t.Fatal("no __consumer_offsets-0 log")
	}
	testutil.Eventually(t, time.Minute, func() error {
		// 600 commit records at about 100 bytes each; compacted, the
		// segments below the active one hold two.
		if size := l.Size(); size > 20<<10 {
			return fmt.Errorf("__consumer_offsets-0 holds %d bytes", size)
		}
		return nil
	})
	tb.restart()
	adm = tb.admin()
	fetched, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[int32]int64{0: commits, 1: 2 * commits} {
		got, ok := fetched.Lookup("data", p)
		if !ok || got.Err != nil || got.At != want {
			t.Fatalf("partition %d: fetched %+v (found %v), want offset %d", p, got, ok, want)
		}
	}
}
