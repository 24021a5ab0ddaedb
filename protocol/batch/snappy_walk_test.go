package batch

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"

	"github.com/klauspost/compress/s2"
)

// rawSnappy is plain, a batch whose records section is not compressed,
// with that section compressed as one raw snappy block, as franz-go sends
// it.
func rawSnappy(tb testing.TB, plain []byte) []byte {
	tb.Helper()
	if len(plain) < HeaderSize {
		tb.Fatalf("a batch of %d bytes, shorter than its header", len(plain))
	}
	return withSnappyBlock(plain[:HeaderSize], s2.EncodeSnappy(nil, plain[HeaderSize:]))
}

// withSnappyBlock is a batch of header with block as its records section:
// the snappy codec in its attributes, its length and CRC set to match.
func withSnappyBlock(header, block []byte) []byte {
	b := append(bytes.Clone(header[:HeaderSize]), block...)
	attrs := int16(binary.BigEndian.Uint16(b[offAttributes:]))
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(attrs&^CompressionMask|int16(Snappy)))
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-LengthPrefix))
	UpdateCRC(b)
	return b
}

// TestSnappyBlockClaimAllocatesOnce validates batches whose raw snappy
// block's header claims more than the block decodes to. A claim past what
// snappy can encode in the block is refused before allocating it, or a
// 70-byte batch would cost the decompression limit (twice: the walk over
// the decoded block, then the stream it falls back to). A claim snappy
// could hold, past the pooled block size, is allocated once: by the stream.
func TestSnappyBlockClaimAllocatesOnce(t *testing.T) {
	codecs := mustCodecs(t)
	// The densest blocks encoders write (zeros, about 20 times) pass.
	plain, err := Build(BuildOptions{BaseTimestamp: 1000}, []Record{{Value: make([]byte, 4<<20)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Check(rawSnappy(t, plain), ValidateOptions{Codecs: codecs}); err != nil {
		t.Fatalf("a batch of zeros compressed as one raw snappy block: %v", err)
	}
	header := craft(t, hdr(1, None), nil, nil)
	for _, tc := range []struct {
		name     string
		claim    int
		block    int
		maxAlloc uint64
	}{
		{"200 MiB in 64 bytes", 200 << 20, 64, 1 << 20},
		{"2 MiB in 100 KiB", 2 << 20, 100 << 10, 3 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Zeros are 1-byte literals: the block decodes to less than
			// it claims, which s2.Decode finds only once it has the buffer.
			block := binary.AppendUvarint(nil, uint64(tc.claim))
			block = append(block, make([]byte, tc.block)...)
			b := withSnappyBlock(header, block)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Check(b, ValidateOptions{Codecs: codecs})
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("a snappy block decoding to less than it claims is accepted")
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > tc.maxAlloc {
				t.Errorf("validation allocated %d bytes for a block claiming %d, want at most %d (%v)", got, tc.claim, tc.maxAlloc, err)
			}
		})
	}
}

// TestSnappyBlockWalkMatchesStream is a differential property test of
// the validation walk over a decoded raw snappy block (initSnappyBlock)
// against the walk through the decompressing stream it replaces: for
// records sections mutated at random, compressed blocks cut or garbled,
// record counts off, topic rules and decompression limits of every kind,
// both must return the same result and the same error, word for word.
func TestSnappyBlockWalkMatchesStream(t *testing.T) {
	codecs := mustCodecs(t)
	rng := rand.New(rand.NewPCG(31, 32))
	good, err := Build(BuildOptions{}, sampleRecords(12, rng), nil)
	if err != nil {
		t.Fatal(err)
	}
	clean := good[HeaderSize:]
	sliced, verdicts := 0, map[int16]int{}
	for iter := range 3000 {
		raw := append([]byte(nil), clean...)
		for range rng.IntN(3) {
			switch rng.IntN(3) {
			case 0:
				raw[rng.IntN(len(raw))] = byte(rng.Uint32())
			case 1:
				raw = raw[:rng.IntN(len(raw))]
			case 2:
				i := rng.IntN(len(raw) + 1)
				raw = append(raw[:i], append([]byte{byte(rng.Uint32())}, raw[i:]...)...)
			}
			if len(raw) == 0 {
				raw = append(raw, 0)
			}
		}
		n := int32(12)
		if rng.IntN(4) == 0 {
			n = int32(rng.IntN(14))
		}
		h := hdr(n, Snappy)
		h.Attributes |= int16(rng.IntN(2)) * TimestampTypeBit
		h.Attributes &^= CompressionMask
		b := rawSnappy(t, append(craft(t, h, nil, nil)[:HeaderSize], raw...))
		if rng.IntN(8) == 0 { // the compressed block itself garbled or cut
			switch i := HeaderSize + rng.IntN(len(b)-HeaderSize); rng.IntN(2) {
			case 0:
				b[i] = byte(rng.Uint32())
			default:
				b = b[:i]
				binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-LengthPrefix))
			}
			UpdateCRC(b)
		}
		opts := ValidateOptions{
			Codecs: codecs, KeyRequired: rng.IntN(3) == 0, LogAppendTime: rng.IntN(4) == 0,
			CheckTimestamps: rng.IntN(3) == 0, NowMs: 1000 + int64(rng.IntN(3000)),
			TimestampBeforeMaxMs: int64(rng.IntN(2000)), TimestampAfterMaxMs: int64(rng.IntN(2000)),
		}
		if rng.IntN(5) == 0 {
			opts.MaxUncompressedBytes = int64(rng.IntN(len(clean) + 10))
		}
		parsed, err := ParseHeader(b)
		if err != nil || len(b) < parsed.Size() {
			continue // checkRecords runs only after the framing passed
		}
		limit := opts.MaxUncompressedBytes
		if limit <= 0 {
			limit = DefaultMaxUncompressedBytes
		}
		var r RecordReader
		if r.initSnappyBlock(b, &parsed, codecs, limit) {
			sliced++
			r.Close()
		}
		got := Result{MaxTimestamp: -1, MaxTimestampIndex: -1}
		gotErr := checkRecords(b, &parsed, opts, &got)
		want := Result{MaxTimestamp: -1, MaxTimestampIndex: -1}
		wantErr := checkRecordsStream(b, &parsed, opts, &want)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) && (gotErr == nil || wantErr == nil || gotErr.Error() != wantErr.Error()) {
			t.Fatalf("iteration %d: block walk %+v, %v; stream %+v, %v", iter, got, gotErr, want, wantErr)
		}
		verdicts[KafkaCode(gotErr)]++
	}
	t.Logf("%d batches walked as a decoded block; verdicts %v", sliced, verdicts)
	if sliced < 1000 {
		t.Fatalf("only %d batches were walked as a decoded block", sliced)
	}
}
