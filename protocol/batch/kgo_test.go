package batch

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// capturedBatch is the records field of one partition of a Produce request.
type capturedBatch struct {
	version int16
	records []byte
}

// fakeBroker speaks just enough of the protocol for franz-go's producer:
// ApiVersions, Metadata, InitProducerID and Produce, recording every
// produced batch. It exists so that tests see batches exactly as a real
// client builds and compresses them.
type fakeBroker struct {
	ln      net.Listener
	mu      sync.Mutex
	batches []capturedBatch
	wg      sync.WaitGroup
}

var fakeVersions = map[int16][2]int16{
	0:  {3, 11}, // Produce: v3+ carries v2 batches; v12+ is topic-ID land
	3:  {0, 9},  // Metadata
	18: {0, 4},  // ApiVersions
	22: {0, 4},  // InitProducerID
}

func startFakeBroker(t *testing.T) *fakeBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fb := &fakeBroker{ln: ln}
	fb.wg.Add(1)
	go func() {
		defer fb.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fb.wg.Add(1)
			go func() {
				defer fb.wg.Done()
				defer c.Close()
				fb.serve(c)
			}()
		}
	}()
	return fb
}

// close stops the listener and waits for connections, which end when the
// client closes them.
func (fb *fakeBroker) close() {
	fb.ln.Close()
	fb.wg.Wait()
}

func (fb *fakeBroker) captured() []capturedBatch {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return append([]capturedBatch(nil), fb.batches...)
}

func (fb *fakeBroker) serve(c net.Conn) {
	var sizeBuf [4]byte
	for {
		if _, err := io.ReadFull(c, sizeBuf[:]); err != nil {
			return
		}
		frame := make([]byte, binary.BigEndian.Uint32(sizeBuf[:]))
		if _, err := io.ReadFull(c, frame); err != nil {
			return
		}
		resp, corrID, flexibleHeader, err := fb.handle(frame)
		if err != nil || resp == nil {
			return
		}
		out := make([]byte, 4, 64)
		out = binary.BigEndian.AppendUint32(out, uint32(corrID))
		if flexibleHeader {
			out = append(out, 0) // no tagged fields
		}
		out = resp.AppendTo(out)
		binary.BigEndian.PutUint32(out, uint32(len(out)-4))
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func (fb *fakeBroker) handle(frame []byte) (kmsg.Response, int32, bool, error) {
	if len(frame) < 10 {
		return nil, 0, false, fmt.Errorf("short frame")
	}
	key := int16(binary.BigEndian.Uint16(frame))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	corrID := int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]
	idLen := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	if idLen > 0 {
		rest = rest[idLen:]
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, 0, false, fmt.Errorf("key %d", key)
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		// Request header v2: skip tagged fields (kgo sends none).
		if len(rest) == 0 || rest[0] != 0 {
			return nil, 0, false, fmt.Errorf("tagged header fields")
		}
		rest = rest[1:]
	}
	if err := req.ReadFrom(rest); err != nil {
		return nil, 0, false, err
	}
	port := fb.ln.Addr().(*net.TCPAddr).Port
	resp := req.ResponseKind()
	resp.SetVersion(version)
	switch r := resp.(type) {
	case *kmsg.ApiVersionsResponse:
		for k, v := range fakeVersions {
			r.ApiKeys = append(r.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: v[0], MaxVersion: v[1]})
		}
	case *kmsg.MetadataResponse:
		r.ControllerID = 0
		r.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: "127.0.0.1", Port: int32(port)}}
		for _, rt := range req.(*kmsg.MetadataRequest).Topics {
			r.Topics = append(r.Topics, kmsg.MetadataResponseTopic{Topic: rt.Topic,
				Partitions: []kmsg.MetadataResponseTopicPartition{{Partition: 0, Leader: 0, Replicas: []int32{0}, ISR: []int32{0}}}})
		}
	case *kmsg.InitProducerIDResponse:
		r.ProducerID, r.ProducerEpoch = 77, 2
	case *kmsg.ProduceResponse:
		pr := req.(*kmsg.ProduceRequest)
		fb.mu.Lock()
		for _, topic := range pr.Topics {
			rt := kmsg.ProduceResponseTopic{Topic: topic.Topic}
			for _, p := range topic.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.ProduceResponseTopicPartition{Partition: p.Partition, BaseOffset: int64(len(fb.batches))})
				fb.batches = append(fb.batches, capturedBatch{version: version, records: bytes.Clone(p.Records)})
			}
			r.Topics = append(r.Topics, rt)
		}
		fb.mu.Unlock()
		if pr.Acks == 0 {
			return nil, 0, false, nil
		}
	default:
		return nil, 0, false, fmt.Errorf("unexpected key %d", key)
	}
	flexibleHeader := resp.IsFlexible() && key != 18 // ApiVersions answers with header v0
	return resp, corrID, flexibleHeader, nil
}

// TestKgoProducedBatches validates batches built and compressed by the
// franz-go producer, for every codec, and reads back what it sent.
func TestKgoProducedBatches(t *testing.T) {
	codecs := mustCodecs(t)
	base := time.UnixMilli(1_700_000_000_000)
	var want []*kgo.Record
	for i := range 40 {
		r := &kgo.Record{
			Key:       []byte(fmt.Sprintf("key-%d", i)),
			Value:     bytes.Repeat([]byte(fmt.Sprintf("value %d ", i)), 20),
			Timestamp: base.Add(time.Duration(i) * time.Millisecond),
		}
		if i%3 == 0 {
			r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("v")}, {Key: "empty"}}
		}
		want = append(want, r)
	}
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			fb := startFakeBroker(t)
			defer fb.close()
			kc := kgo.NoCompression()
			if codec != None {
				kc = kgoCodecs[codec]
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(fb.ln.Addr().String()), kgo.DefaultProduceTopic("t"),
				kgo.ProducerBatchCompression(kc), kgo.ProducerLinger(20*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			recs := make([]*kgo.Record, len(want))
			for i, r := range want {
				c := *r
				recs[i] = &c
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			cl.Close()
			var got []Record
			var gotTs []int64
			for _, cb := range fb.captured() {
				h, err := Validate(cb.records, ValidateOptions{Codecs: codecs, KeyRequired: true, ProduceVersion: cb.version,
					MaxMessageBytes: 1 << 20, CheckTimestamps: true, NowMs: base.UnixMilli(), TimestampBeforeMaxMs: 0, TimestampAfterMaxMs: 1000})
				if err != nil {
					t.Fatalf("Validate kgo's batch (produce v%d): %v", cb.version, err)
				}
				if h.Compression() != codec {
					t.Fatalf("kgo sent %s, want %s", h.Compression(), codec)
				}
				if h.ProducerID != 77 || h.ProducerEpoch != 2 || h.BaseSequence != int32(len(got)) {
					t.Fatalf("producer fields %d/%d/%d, want 77/2/%d", h.ProducerID, h.ProducerEpoch, h.BaseSequence, len(got))
				}
				_, rs, err := ReadRecords(cb.records, codecs)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rs {
					gotTs = append(gotTs, h.BaseTimestamp+r.TimestampDelta)
				}
				got = append(got, rs...)
				for _, to := range allCodecs {
					re, err := Recompress(cb.records, to, codecs)
					if err != nil {
						t.Fatal(err)
					}
					if _, rs2, err := ReadRecords(re, codecs); err != nil || !reflect.DeepEqual(rs2, rs) {
						t.Fatalf("recompress to %s: %v", to, err)
					}
				}
			}
			if len(got) != len(want) {
				t.Fatalf("read %d records, produced %d", len(got), len(want))
			}
			for i, w := range want {
				g := got[i]
				if !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) || gotTs[i] != w.Timestamp.UnixMilli() ||
					len(g.Headers) != len(w.Headers) {
					t.Fatalf("record %d: got %+v (ts %d), want %+v", i, g, gotTs[i], w)
				}
				for j, wh := range w.Headers {
					if g.Headers[j].Key != wh.Key || !bytes.Equal(g.Headers[j].Value, wh.Value) {
						t.Fatalf("record %d header %d: %+v, want %+v", i, j, g.Headers[j], wh)
					}
				}
			}
		})
	}
}
