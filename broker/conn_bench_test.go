package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
)

// pipelinedProduces is how many Produce requests BenchmarkProducePipelined
// keeps in flight on its connection: franz-go's default
// (MaxProduceRequestsInflightPerBroker).
const pipelinedProduces = 5

// BenchmarkProducePipelined sends, per iteration, 5 pipelined acks=1
// Produce v9 requests of one 16 KiB batch (160 records of 100 bytes,
// franz-go's default batch size) over a real TCP connection and reads the
// 5 answers, so the whole request path runs: the reader's frame read, the
// applier, the writer. B/op and allocs/op count the whole process (client
// and broker); cpu-ns/op is the process's CPU per 5 requests.
func BenchmarkProducePipelined(b *testing.B) {
	tb := startBroker(b, map[string]string{"log.segment.bytes": fmt.Sprint(64 << 20), "log.retention.bytes": fmt.Sprint(128 << 20)})
	const topic = "bench-pipelined"
	tb.createTopic(topic, 1, nil)
	tb.leaderOf(topic, 0)
	recs := make([]batch.Record, 160)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: make([]byte, benchRecordBytes)}
	}
	records, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli()}, recs, tb.b.codecs)
	if err != nil {
		b.Fatal(err)
	}
	req := produceV9(topic, records)

	// The requests are encoded once, so that the client side allocates
	// only the small answers.
	wire := pipelinedWire(req)
	pc := dialProbe(b, tb.addr)
	b.SetBytes(int64(pipelinedProduces * len(records)))
	b.ReportAllocs()
	cpu0 := testutil.ProcessCPU(b)
	for b.Loop() {
		if _, err := pc.c.Write(wire); err != nil {
			b.Fatal(err)
		}
		for range pipelinedProduces {
			resp, err := pc.recv(req, 30*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
				b.Fatalf("produce: error %d", code)
			}
		}
	}
	testutil.ReportCPUPerOp(b, cpu0)
}

// produceV9 is an acks=1 Produce v9 request of one batch to partition 0.
func produceV9(topic string, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = 1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// pipelinedWire is pipelinedProduces copies of req, framed, with
// correlation ids 1 to pipelinedProduces, to be written at once.
func pipelinedWire(req kmsg.Request) []byte {
	var wire []byte
	for i := range pipelinedProduces {
		wire = append(wire, kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, int32(i+1))...)
	}
	return wire
}
