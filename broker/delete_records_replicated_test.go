package broker

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestDeleteRecordsReachesFollowers: DeleteRecords on a three-way
// replicated partition answers only once every replica has moved its log
// start offset (Kafka's low watermark), so the deleted records do not come
// back when a follower takes over. Before, the leader answered after its
// own delete, with the followers still holding the records.
func TestDeleteRecordsReachesFollowers(t *testing.T) {
	c := startReplCluster(t)
	ctx := testContext(t)
	const topic = "deleted"
	adm := kadm.NewClient(c.client())
	testutil.Eventually(t, 30*time.Second, func() error {
		bs, err := adm.ListBrokers(ctx)
		if err != nil || len(bs) != 3 {
			return fmt.Errorf("brokers %v: %v", bs, err)
		}
		return nil
	})
	if resp, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	all := []int32{1, 2, 3}
	var leader int32
	testutil.Eventually(t, 30*time.Second, func() error {
		l, isr, err := c.partitionMeta(ctx, adm, topic)
		if err != nil || !slices.Equal(isr, all) {
			return fmt.Errorf("ISR %v: %v", isr, err)
		}
		leader = l
		return nil
	})
	producer := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(20))
	acked := produceAcked(ctx, t, producer, topic, "rec", 20)
	testutil.Eventually(t, 30*time.Second, func() error { return c.replicasIdentical(topic, all...) })

	const deleteBefore = 15
	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: deleteBefore})
	dr, err := adm.DeleteRecords(ctx, offsets)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := dr.Lookup(topic, 0); d.Err != nil || d.LowWatermark != deleteBefore {
		t.Fatalf("delete records: %+v", d)
	}
	for _, id := range all {
		if got := c.brokers[id].b.replicas.Get(topic, 0).Log().LogStartOffset(); got < deleteBefore {
			t.Fatalf("DeleteRecords answered while broker %d (leader %d) still starts at %d", id, leader, got)
		}
	}

	// The leader goes; the new one must not serve the deleted records.
	c.brokers[leader].stop()
	consumer := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < len(acked)-deleteBefore {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < deleteBefore {
				t.Fatalf("after failover a deleted record came back: offset %d %q", r.Offset, r.Value)
			}
			got = append(got, string(r.Value))
		})
	}
	if !slices.Equal(got, acked[deleteBefore:]) {
		t.Fatalf("after failover consumed %v, want %v", got, acked[deleteBefore:])
	}
}
