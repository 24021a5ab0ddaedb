package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/protocol/batch"
)

// TestProduceTopicByIDAllocations: resolving a Produce v13 topic id to its
// name is done for every topic of every request and must not copy the
// topic's metadata.
func TestProduceTopicByIDAllocations(t *testing.T) {
	tb := startBroker(t, nil)
	const topic = "by-id"
	tb.createTopic(topic, 12, nil)
	st, ok := tb.b.meta.topic(topic)
	if !ok {
		t.Fatal("topic not in the metadata cache")
	}
	rt := kmsg.NewProduceRequestTopic()
	rt.TopicID = st.id
	name, code := tb.b.produceTopic(13, rt)
	if name != topic || code != 0 {
		t.Fatalf("produceTopic = %q, %d; want %q, 0", name, code, topic)
	}
	if allocs := testing.AllocsPerRun(100, func() { tb.b.produceTopic(13, rt) }); allocs != 0 {
		t.Errorf("produceTopic by id: %v allocations, want 0", allocs)
	}
}

// TestProduceApplyAllocations bounds the allocations of a whole acks=1
// Produce through the connection's apply (header, decode, handler, log
// append, response) for a request of 12 partitions, as franz-go sends one
// per broker: the fixed part per request and the part per partition.
func TestProduceApplyAllocations(t *testing.T) {
	tb := startBroker(t, nil)
	const topic = "allocs"
	const partitions = 12
	tb.createTopic(topic, partitions, nil)
	for p := range int32(partitions) {
		tb.leaderOf(topic, p)
	}
	recs := make([]batch.Record, 100)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: make([]byte, 100)}
	}
	records, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli()}, recs, tb.b.codecs)
	if err != nil {
		t.Fatal(err)
	}
	frameOf := func(n int32) []byte {
		req := produceV9(topic, records)
		for p := int32(1); p < n; p++ {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, records
			req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		}
		return kmsg.NewRequestFormatter(kmsg.FormatterClientID("allocs")).AppendRequest(nil, req, 7)[4:]
	}
	c := &conn{b: tb.b, listener: "PLAINTEXT", principal: auth.Anonymous, logger: testLogger()}
	allocs := func(wire []byte) float64 {
		frame := make([]byte, len(wire))
		return testing.AllocsPerRun(50, func() {
			copy(frame, wire) // the append rewrites offsets in the frame
			p, err := c.apply(context.Background(), frame)
			if err != nil {
				t.Fatal(err)
			}
			for _, sp := range p.reply.resp.(*kmsg.ProduceResponse).Topics[0].Partitions {
				if sp.ErrorCode != 0 {
					t.Fatalf("partition %d: error %d", sp.Partition, sp.ErrorCode)
				}
			}
			tb.b.metrics.Requests.Completed(p.slot, 0)
		})
	}
	one, all := allocs(frameOf(1)), allocs(frameOf(partitions))
	perPartition := (all - one) / (partitions - 1)
	t.Logf("allocations: %v for 1 partition, %v for %d (%.2f per partition)", one, all, partitions, perPartition)
	// Before the cuts: 11.7 per request and 2.3 per partition. What is
	// left per request is mostly kmsg's decode and the response; per
	// partition, replica's maximal ISR (a copy per high watermark check).
	// Under -race two more per request (before the cuts: about 13.7).
	maxPerRequest, maxPerPartition := 8.0, 1.5
	if raceEnabled {
		maxPerRequest += 2
	}
	if fixed := one - perPartition; fixed > maxPerRequest || perPartition > maxPerPartition {
		t.Errorf("%.2f allocations per request and %.2f per partition, want at most %v and %v", fixed, perPartition, maxPerRequest, maxPerPartition)
	}
}
