package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fuzzSeeds are the inputs every batch decoder is seeded with: empty, zero,
// maximal lengths, valid batches of every codec, and valid plus garbage.
func fuzzSeeds(f *testing.F) [][]byte {
	seeds := [][]byte{nil, make([]byte, HeaderSize), make([]byte, 200)}
	maxLen := make([]byte, HeaderSize)
	binary.BigEndian.PutUint32(maxLen[8:], 0x7fffffff)
	maxLen[16] = 2
	binary.BigEndian.PutUint32(maxLen[57:], 0x7fffffff)
	seeds = append(seeds, maxLen)
	for _, codec := range allCodecs {
		recs := sampleRecords(5, rand.New(rand.NewPCG(9, 9)))
		b, err := Build(BuildOptions{Compression: codec, BaseTimestamp: 1000}, recs, nil)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b, append(bytes.Clone(b), 0xff, 0, 1))
	}
	// Snappy as franz-go sends it: one raw block, no xerial framing.
	plain, err := Build(BuildOptions{BaseTimestamp: 1000}, sampleRecords(5, rand.New(rand.NewPCG(9, 9))), nil)
	if err != nil {
		f.Fatal(err)
	}
	raw := rawSnappy(f, plain)
	seeds = append(seeds, raw, append(bytes.Clone(raw), 0xff, 0, 1))
	return seeds
}

// FuzzValidate: Validate must never panic, must classify every error it
// returns, and a batch it accepts must read back completely.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, false, false)
		f.Add(s, true, true)
	}
	codecs := MustCodecs()
	f.Fuzz(func(t *testing.T, b []byte, fixCRC, keyRequired bool) {
		// Most mutations break the CRC; fixing it lets the fuzzer reach
		// the record checks behind it.
		if h, err := ParseHeader(b); fixCRC && err == nil && h.Size() <= len(b) {
			b = bytes.Clone(b)
			UpdateCRC(b[:h.Size()])
		}
		opts := ValidateOptions{Codecs: codecs, KeyRequired: keyRequired, MaxUncompressedBytes: 4 << 20}
		res, err := Check(b, opts)
		if err != nil {
			if KafkaCode(err) == kerr.UnknownServerError.Code {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		h, recs, err := ReadRecords(b, codecs)
		if err != nil {
			t.Fatalf("validated batch does not read: %v", err)
		}
		if h != res.Header || len(recs) != int(h.RecordCount) || h.Size() != len(b) {
			t.Fatalf("header %+v, %d records, %d bytes", h, len(recs), len(b))
		}
		if keyRequired {
			for i, r := range recs {
				if r.Key == nil {
					t.Fatalf("record %d has no key", i)
				}
			}
		}
		re, err := Recompress(b, Zstd, codecs)
		if err != nil {
			t.Fatalf("recompress: %v", err)
		}
		if _, err := Validate(re, opts); err != nil {
			t.Fatalf("recompressed batch invalid: %v", err)
		}
	})
}

// FuzzRecords feeds the record reader, through each codec's decoder, with
// arbitrary payloads; whatever it accepts must survive a rebuild.
func FuzzRecords(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		if h, err := ParseHeader(s); err == nil && len(s) >= h.Size() {
			f.Add(s[HeaderSize:h.Size()], uint8(h.Compression()), h.RecordCount)
		}
		f.Add(s, uint8(0), int32(1))
	}
	codecs := MustCodecs()
	f.Fuzz(func(t *testing.T, payload []byte, codec uint8, count int32) {
		h := Header{Attributes: int16(codec & CompressionMask), RecordCount: count, LastOffsetDelta: count - 1}
		b := make([]byte, HeaderSize, HeaderSize+len(payload))
		binary.BigEndian.PutUint32(b[offBatchLength:], uint32(HeaderSize-LengthPrefix+len(payload)))
		b[offMagic] = MagicV2
		binary.BigEndian.PutUint16(b[offAttributes:], uint16(h.Attributes))
		binary.BigEndian.PutUint32(b[offRecordCount:], uint32(count))
		b = append(b, payload...)
		r, err := newRecordReader(b, codecs, 4<<20)
		if err != nil {
			return
		}
		defer r.Close()
		var recs []Record
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if KafkaCode(err) == kerr.UnknownServerError.Code {
					t.Fatalf("unclassified error %v", err)
				}
				return
			}
			recs = append(recs, rec)
		}
		if len(recs) != int(count) {
			t.Fatalf("%d records, header says %d", len(recs), count)
		}
		if len(recs) == 0 {
			return
		}
		// Rebuild uncompressed with the same deltas when Build allows them.
		rebuilt, err := Build(BuildOptions{}, recs, codecs)
		if errors.Is(err, errBuild) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		_, again, err := ReadRecords(rebuilt, codecs)
		if err != nil {
			t.Fatalf("rebuilt batch does not read: %v", err)
		}
		if !reflect.DeepEqual(normalize(again), normalize(recs)) {
			t.Fatalf("rebuild changed records:\n got %+v\nwant %+v", again, recs)
		}
	})
}

// normalize maps empty header lists to nil: a reader cannot tell them apart.
func normalize(recs []Record) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		if len(r.Headers) == 0 {
			r.Headers = nil
		}
		out[i] = r
	}
	return out
}
