package broker

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

func TestFramePoolClasses(t *testing.T) {
	var p framePool
	for _, size := range []int{0, 1, 8, minPooledFrame - 1, minPooledFrame, minPooledFrame + 1, 16 << 10, 16<<10 + 100, maxPooledFrame - 1, maxPooledFrame} {
		buf := p.get(size)
		if len(buf) != 0 || cap(buf) < size || cap(buf) > max(2*size, minPooledFrame) {
			t.Errorf("get(%d): len %d cap %d, want len 0 and a cap from %d to %d", size, len(buf), cap(buf), size, max(2*size, minPooledFrame))
		}
		p.put(buf)
	}
	if buf := p.get(maxPooledFrame + 1); buf != nil {
		t.Errorf("get(%d) = cap %d, want nil (beyond the pooled classes)", maxPooledFrame+1, cap(buf))
	}
	// A buffer the pool did not make is not taken: its capacity would
	// not be its class's.
	p.put(make([]byte, 0, 5000))
	for range 10 {
		if buf := p.get(5000); cap(buf) != 8<<10 {
			t.Fatalf("get(5000) after a foreign put: cap %d, want %d", cap(buf), 8<<10)
		}
	}
}

// TestPipelinedProduceReusesFrames sends Produce requests 5 at a time on
// one connection, as franz-go pipelines them, and checks that the frames
// are read into reused memory: the process allocates far less than the
// bytes it reads. A buffer per connection was reused only when the reader
// happened to be idle, so nearly every frame was allocated.
func TestPipelinedProduceReusesFrames(t *testing.T) {
	tb := startBroker(t, nil)
	const topic = "pipelined-frames"
	tb.createTopic(topic, 1, nil)
	tb.leaderOf(topic, 0)
	recs := make([]batch.Record, 64)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: bytes.Repeat([]byte{byte(i)}, 1000)}
	}
	records, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli()}, recs, tb.b.codecs)
	if err != nil {
		t.Fatal(err)
	}
	req := produceV9(topic, records)
	wire := pipelinedWire(req)
	pc := dialProbe(t, tb.addr)
	round := func() {
		if _, err := pc.c.Write(wire); err != nil {
			t.Fatal(err)
		}
		for range pipelinedProduces {
			resp, err := pc.recv(req, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
				t.Fatalf("produce: error %d", code)
			}
		}
	}
	round() // the first frames are new
	const rounds = 40
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range rounds {
		round()
	}
	runtime.ReadMemStats(&after)
	read := uint64(rounds * len(wire))
	// Under -race sync.Pool drops a quarter of what is put back, so up to
	// a quarter of the frames are new even with reuse.
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d bytes while reading %d bytes of Produce frames", allocated, read)
	if allocated > read/2 {
		t.Errorf("allocated %d bytes while reading %d bytes of Produce frames, want at most half", allocated, read)
	}

	// Every record came through intact: no frame was reused while its
	// bytes were still in use.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	fetch.MaxBytes = 64 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 64 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	resp := tb.roundTrip(fetch).(*kmsg.FetchResponse)
	data := resp.Topics[0].Partitions[0].RecordBatches
	n := 0
	for len(data) > 0 {
		h, err := batch.ParseHeader(data)
		if err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
		b := data[:h.Size()]
		if err := batch.CheckCRC(b, &h); err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
		data = data[h.Size():]
		n++
	}
	if want := (rounds + 1) * pipelinedProduces; n != want {
		t.Fatalf("read back %d batches, want %d", n, want)
	}
}
