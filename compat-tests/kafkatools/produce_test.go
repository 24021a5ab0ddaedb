package kafkatools

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// produceCounts writes counts[p] records to partition p of topic through
// franz-go, with key k<p>-<i> and value v<p>-<i>, and fails the test on any
// produce error.
func produceCounts(t *testing.T, addr, topic string, counts []int) {
	t.Helper()
	cl := testutil.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p, n := range counts {
		for i := range n {
			recs = append(recs, &kgo.Record{
				Topic:     topic,
				Partition: int32(p),
				Key:       fmt.Appendf(nil, "k%d-%d", p, i),
				Value:     fmt.Appendf(nil, "v%d-%d", p, i),
			})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records to %s: %v", len(recs), topic, err)
	}
}
