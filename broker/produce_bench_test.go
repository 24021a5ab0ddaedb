package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/metrics"
	"github.com/brook-mq/brook/protocol"
	"github.com/brook-mq/brook/protocol/batch"
)

// benchProduceRecords is the batch size of BenchmarkProduceApply: 1,000
// records of 100 bytes (about 107 KiB uncompressed), in the range franz-go
// fills at full throughput.
const (
	benchProduceRecords = 1000
	benchRecordBytes    = 100
)

// BenchmarkProduceApply drives one idempotent Produce v9 acks=1 request of
// 1,000 100-byte records through the connection's apply (header parse,
// kmsg decode, the handler, batch validation, producer-state check, the
// log append) and encodes the response, as a connection's applier and
// writer do, without the socket. Each iteration advances the batch's base
// sequence and rewrites its CRC, as the producer would (included in ns/op:
// one CRC32C of the batch). ns/op is per batch; divide by 1,000 for per
// record (the bench reports ns/record too, and cpu-ns/op, the process's CPU
// time per batch).
func BenchmarkProduceApply(b *testing.B) {
	for _, codec := range []batch.Compression{batch.None, batch.LZ4, batch.Zstd} {
		b.Run(codec.String(), func(b *testing.B) { benchProduceApply(b, codec) })
	}
}

func benchProduceApply(b *testing.B, codec batch.Compression) {
	tb := startBroker(b, map[string]string{"log.segment.bytes": fmt.Sprint(64 << 20), "log.retention.bytes": fmt.Sprint(128 << 20)})
	const topic = "bench-produce"
	tb.createTopic(topic, 1, nil)
	tb.leaderOf(topic, 0)
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = 60000
	ir := tb.roundTrip(init).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		b.Fatalf("init producer id: %d", ir.ErrorCode)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]batch.Record, benchProduceRecords)
	for i := range recs {
		v := make([]byte, benchRecordBytes)
		for j := range v {
			v[j] = 'a' + byte(rng.IntN(26)) // compressible as text, not trivially
		}
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: v}
	}
	records, err := batch.Build(batch.BuildOptions{
		PartitionLeaderEpoch: -1, Compression: codec, BaseTimestamp: time.Now().UnixMilli(),
		Producer: &batch.Producer{ID: ir.ProducerID, Epoch: ir.ProducerEpoch},
	}, recs, tb.b.codecs)
	if err != nil {
		b.Fatal(err)
	}
	req := produceV9(topic, records)
	wire := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 7)[4:]
	// The records sit at the end of the frame, before the tagged fields of
	// the partition, the topic and the request.
	at := len(wire) - 3 - len(records)
	if string(wire[at:at+len(records)]) != string(records) {
		b.Fatal("records not found in the frame")
	}
	frame := make([]byte, len(wire))

	c := &conn{b: tb.b, listener: "PLAINTEXT", principal: auth.Anonymous, logger: testLogger()}
	ctx := context.Background()
	var out []byte
	b.SetBytes(int64(len(records)))
	b.ReportAllocs()
	seq := int32(0)
	cpu0 := testutil.ProcessCPU(b)
	for b.Loop() {
		copy(frame, wire) // the reader's read into its reused buffer
		binary.BigEndian.PutUint32(frame[at+53:], uint32(seq))
		batch.UpdateCRC(frame[at : at+len(records)])
		seq += benchProduceRecords
		p, err := c.apply(ctx, frame)
		if err != nil {
			b.Fatal(err)
		}
		resp := p.reply.resp.(*kmsg.ProduceResponse)
		if sp := resp.Topics[0].Partitions[0]; sp.ErrorCode != 0 {
			b.Fatalf("produce: error %d", sp.ErrorCode)
		}
		out = protocol.AppendResponse(out[:0], p.correlationID, p.reply.resp)
		if p.slot != metrics.NoSlot {
			tb.b.metrics.Requests.Completed(p.slot, 0)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchProduceRecords, "ns/record")
	// The process's CPU time (user and system, every goroutine of the
	// broker) per batch.
	testutil.ReportCPUPerOp(b, cpu0)
}
