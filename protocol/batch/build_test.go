package batch

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var allCodecs = []Compression{None, Gzip, Snappy, LZ4, Zstd}

// sampleRecords returns n records exercising null and empty keys and
// values, headers (with a null value), and negative timestamp deltas.
func sampleRecords(n int, rng *rand.Rand) []Record {
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		r.OffsetDelta = int32(i)
		r.TimestampDelta = int64(rng.IntN(2000)) - 100
		switch i % 4 {
		case 0:
			r.Key = []byte(fmt.Sprintf("key-%d", i))
			r.Value = bytes.Repeat([]byte{byte(i)}, rng.IntN(300))
		case 1:
			r.Value = []byte{} // null key, empty value
		case 2:
			r.Key = []byte{}
			r.Headers = []RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "", Value: nil}}
		case 3:
			r.Key = []byte("k")
			r.Headers = []RecordHeader{{Key: "trace", Value: []byte{}}}
		}
	}
	return recs
}

func mustCodecs(t testing.TB) *Codecs {
	t.Helper()
	c, err := NewCodecs(CodecsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBuildRoundTrip(t *testing.T) {
	codecs := mustCodecs(t)
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		opts BuildOptions
		n    int
	}{
		{"one record", BuildOptions{BaseTimestamp: 1700000000000}, 1},
		{"many records", BuildOptions{BaseTimestamp: 1700000000000}, 200},
		{"idempotent", BuildOptions{BaseTimestamp: 5, Producer: &Producer{ID: 42, Epoch: 3, BaseSequence: 17}}, 10},
		{"transactional", BuildOptions{BaseTimestamp: 5, Transactional: true, Producer: &Producer{ID: 7, Epoch: 0, BaseSequence: 0}}, 3},
		{"log append time", BuildOptions{BaseTimestamp: 5, LogAppendTime: true, MaxTimestamp: 99999}, 4},
		{"offsets and epoch", BuildOptions{BaseOffset: 1 << 40, PartitionLeaderEpoch: 12, BaseTimestamp: -1}, 5},
	}
	for _, tt := range tests {
		for _, codec := range allCodecs {
			t.Run(tt.name+"/"+codec.String(), func(t *testing.T) {
				recs := sampleRecords(tt.n, rng)
				opts := tt.opts
				opts.Compression = codec
				b, err := Build(opts, recs, codecs)
				if err != nil {
					t.Fatal(err)
				}
				h, err := ParseHeader(b)
				if err != nil {
					t.Fatal(err)
				}
				if h.Size() != len(b) {
					t.Fatalf("size %d, len %d", h.Size(), len(b))
				}
				if err := CheckCRC(b, &h); err != nil {
					t.Fatal(err)
				}
				checkHeader(t, h, opts, recs)
				gotH, got, err := ReadRecords(b, codecs)
				if err != nil {
					t.Fatal(err)
				}
				if gotH != h {
					t.Fatalf("reader header %+v, want %+v", gotH, h)
				}
				if !reflect.DeepEqual(got, recs) {
					t.Fatalf("records differ:\n got %+v\nwant %+v", got, recs)
				}
			})
		}
	}
}

// checkHeader compares h with what a naive reading of opts and recs says.
func checkHeader(t *testing.T, h Header, opts BuildOptions, recs []Record) {
	t.Helper()
	want := Header{
		BaseOffset: opts.BaseOffset, BatchLength: h.BatchLength, PartitionLeaderEpoch: opts.PartitionLeaderEpoch,
		Magic: 2, CRC: h.CRC, Attributes: int16(opts.Compression),
		LastOffsetDelta: recs[len(recs)-1].OffsetDelta, BaseTimestamp: opts.BaseTimestamp,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, RecordCount: int32(len(recs)),
	}
	want.MaxTimestamp = opts.BaseTimestamp + recs[0].TimestampDelta
	for _, r := range recs {
		if ts := opts.BaseTimestamp + r.TimestampDelta; ts > want.MaxTimestamp {
			want.MaxTimestamp = ts
		}
	}
	if opts.LogAppendTime {
		want.Attributes |= 0x08
		want.MaxTimestamp = opts.MaxTimestamp
	}
	if opts.Transactional {
		want.Attributes |= 0x10
	}
	if opts.Control {
		want.Attributes |= 0x20
	}
	if p := opts.Producer; p != nil {
		want.ProducerID, want.ProducerEpoch, want.BaseSequence = p.ID, p.Epoch, p.BaseSequence
	}
	if h != want {
		t.Fatalf("header\n got %+v\nwant %+v", h, want)
	}
}

// TestBuildMatchesKmsg decodes an uncompressed built batch with kmsg's own
// decoders, an implementation independent of ours.
func TestBuildMatchesKmsg(t *testing.T) {
	recs := sampleRecords(20, rand.New(rand.NewPCG(3, 4)))
	b, err := Build(BuildOptions{BaseTimestamp: 1000}, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if int(rb.Length)+12 != len(b) || rb.NumRecords != 20 {
		t.Fatalf("kmsg header %+v", rb)
	}
	rest := rb.Records
	for i, want := range recs {
		var kr kmsg.Record
		if err := kr.ReadFrom(rest); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		n := int(kr.Length) + int(varlongSize(int64(kr.Length)))
		rest = rest[n:]
		if kr.OffsetDelta != want.OffsetDelta || kr.TimestampDelta64 != want.TimestampDelta ||
			!bytes.Equal(kr.Key, want.Key) || (kr.Key == nil) != (want.Key == nil) ||
			!bytes.Equal(kr.Value, want.Value) || (kr.Value == nil) != (want.Value == nil) ||
			len(kr.Headers) != len(want.Headers) {
			t.Fatalf("record %d: kmsg read %+v, want %+v", i, kr, want)
		}
		for j, h := range kr.Headers {
			if h.Key != want.Headers[j].Key || !bytes.Equal(h.Value, want.Headers[j].Value) ||
				(h.Value == nil) != (want.Headers[j].Value == nil) {
				t.Fatalf("record %d header %d: %+v, want %+v", i, j, h, want.Headers[j])
			}
		}
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes left after the records", len(rest))
	}
}

func TestBuildRejects(t *testing.T) {
	tests := []struct {
		name string
		opts BuildOptions
		recs []Record
	}{
		{"no records", BuildOptions{}, nil},
		{"repeated offset delta", BuildOptions{}, []Record{{OffsetDelta: 0}, {OffsetDelta: 0}}},
		{"decreasing offset delta", BuildOptions{}, []Record{{OffsetDelta: 3}, {OffsetDelta: 2}}},
		{"negative offset delta", BuildOptions{}, []Record{{OffsetDelta: -1}}},
		{"unknown codec", BuildOptions{Compression: 6}, []Record{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := Build(tt.opts, tt.recs, nil); err == nil {
				t.Fatalf("built %x", b)
			}
		})
	}
}

// TestBuildControl builds a transaction marker the way a coordinator would.
func TestBuildControl(t *testing.T) {
	key := (&kmsg.EndTxnMarker{}).AppendTo(nil) // any bytes will do as a value
	b, err := Build(BuildOptions{Control: true, Transactional: true, Producer: &Producer{ID: 9, Epoch: 1, BaseSequence: -1}},
		[]Record{{Key: []byte{0, 0, 0, 1}, Value: key}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Control() || !h.Transactional() || h.ProducerID != 9 || h.BaseSequence != -1 {
		t.Fatalf("header %+v", h)
	}
}
