package batch

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestRecompressEveryPair(t *testing.T) {
	codecs := mustCodecs(t)
	recs := sampleRecords(50, rand.New(rand.NewPCG(5, 6)))
	opts := BuildOptions{BaseTimestamp: 1 << 40, LogAppendTime: true, MaxTimestamp: 1<<40 + 7,
		Transactional: true, Producer: &Producer{ID: 3, Epoch: 4, BaseSequence: 5}, PartitionLeaderEpoch: 9}
	for _, from := range allCodecs {
		for _, to := range allCodecs {
			t.Run(from.String()+"->"+to.String(), func(t *testing.T) {
				opts.Compression = from
				b, err := Build(opts, recs, codecs)
				if err != nil {
					t.Fatal(err)
				}
				out, err := Recompress(b, to, codecs)
				if err != nil {
					t.Fatal(err)
				}
				hIn, _ := ParseHeader(b)
				hOut, err := ParseHeader(out)
				if err != nil {
					t.Fatal(err)
				}
				if hOut.Size() != len(out) || CheckCRC(out, &hOut) != nil {
					t.Fatalf("bad framing: %+v, %d bytes", hOut, len(out))
				}
				if hOut.Compression() != to {
					t.Fatalf("codec %s, want %s", hOut.Compression(), to)
				}
				// Everything but codec, length and CRC must be kept.
				want := hIn
				want.Attributes = hIn.Attributes&^CompressionMask | int16(to)
				want.BatchLength, want.CRC = hOut.BatchLength, hOut.CRC
				if hOut != want {
					t.Fatalf("header\n got %+v\nwant %+v", hOut, want)
				}
				_, got, err := ReadRecords(out, codecs)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, recs) {
					t.Fatal("records changed")
				}
				if from == to && !bytes.Equal(out, b) {
					t.Fatal("same codec changed the bytes")
				}
			})
		}
	}
}

func TestRecompressRejects(t *testing.T) {
	b := validBatch(t, None, 2)
	if _, err := Recompress(b, 7, nil); KafkaCode(err) != codeCodec {
		t.Fatalf("codec 7: %v", err)
	}
	if _, err := Recompress(b[:len(b)-1], Gzip, nil); err == nil {
		t.Fatal("truncated batch recompressed")
	}
}

func TestRenumber(t *testing.T) {
	codecs := mustCodecs(t)
	raw := record(body(3, 5, "a", "1")).raw(record(body(1, 9, "b", "2"))...).raw(record(body(2, 10, "c", "3"))...)
	h := hdr(3, Gzip)
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = 8, 1, 100
	in := craft(t, h, raw, codecs)
	res, err := Check(in, ValidateOptions{Codecs: codecs})
	if err != nil {
		t.Fatal(err)
	}
	if res.OffsetsInOrder {
		t.Fatal("deltas 5, 9, 10 reported in order")
	}
	out, err := Renumber(in, Zstd, codecs)
	if err != nil {
		t.Fatal(err)
	}
	res, err = Check(out, ValidateOptions{Codecs: codecs})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OffsetsInOrder || res.LastOffsetDelta != 2 || res.Compression() != Zstd || res.ProducerID != 8 || res.BaseSequence != 100 {
		t.Fatalf("result %+v", res)
	}
	_, recs, err := ReadRecords(out, codecs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if r.OffsetDelta != int32(i) || r.TimestampDelta != []int64{3, 1, 2}[i] || string(r.Key) != []string{"a", "b", "c"}[i] {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
}
