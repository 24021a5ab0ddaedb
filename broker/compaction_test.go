package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

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
