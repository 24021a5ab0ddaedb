package batch

import (
	"math/rand/v2"
	"testing"
)

// FuzzScanRecord: the fast scan and the reader agree on every input: both
// accept it with the same fields and size, or the scan declines (and the
// reader, which then runs, decides). The scan also never declines a record
// the reader accepts, or the fast path would be slow for nothing.
func FuzzScanRecord(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, rec := range sampleRecords(20, rng) {
		b, err := appendRecord(nil, &rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(append(b, 0xff))
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte{})
	f.Add([]byte{0})
	f.Add([]byte{2, 0, 0})
	f.Add([]byte{0x80, 0x01})                            // a two-byte length, nothing after it
	f.Add([]byte{0x0c, 0, 0, 0, 1, 0x81, 0x01, 0, 0, 0}) // a value length of two bytes past the record
	f.Fuzz(func(t *testing.T, p []byte) {
		got, n, ok := scanRecord(p)
		// The short scan accepts a subset of what scanRecord accepts, with
		// the same fields and size.
		if short, sn, sok := scanShortRecord(p); sok && (!ok || short != got || sn != n) {
			t.Fatalf("short scan %+v of %d bytes (ok), scan %+v of %d bytes (ok %v)", short, sn, got, n, ok)
		}
		src := source{buf: p}
		want, hasKey, err := src.readRecord(false)
		switch {
		case ok && err != nil:
			t.Fatalf("scan accepts a record the reader rejects: %v", err)
		case !ok && err == nil:
			t.Fatalf("scan declines a record the reader accepts (%d bytes)", src.pos)
		case !ok:
			return
		}
		if n != src.pos || got.timestampDelta != want.TimestampDelta || got.offsetDelta != want.OffsetDelta || got.hasKey != hasKey {
			t.Fatalf("scan %+v of %d bytes, reader %+v hasKey %v of %d bytes", got, n, want, hasKey, src.pos)
		}
	})
}

// TestScanRecordStream: in a compressed batch the scan runs on the
// stream's buffer, and the walk still stops at MaxUncompressedBytes with
// the reader's error, and gives the same result as the byte-at-a-time
// reader.
func TestScanRecordStream(t *testing.T) {
	codecs := MustCodecs()
	recs := sampleRecords(300, rand.New(rand.NewPCG(5, 6)))
	for _, codec := range allCodecs {
		b, err := Build(BuildOptions{Compression: codec, BaseTimestamp: 1000}, recs, codecs)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Check(b, ValidateOptions{Codecs: codecs})
		if err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
		if res.UncompressedBytes <= 0 || !res.OffsetsInOrder {
			t.Fatalf("%s: %+v", codec, res)
		}
		if codec == None {
			continue
		}
		_, err = Check(b, ValidateOptions{Codecs: codecs, MaxUncompressedBytes: res.UncompressedBytes - 1})
		if KafkaCode(err) != KafkaCode(ErrMessageTooLarge) {
			t.Fatalf("%s: limit one byte short: %v", codec, err)
		}
		if _, err = Check(b, ValidateOptions{Codecs: codecs, MaxUncompressedBytes: res.UncompressedBytes}); err != nil {
			t.Fatalf("%s: limit exact: %v", codec, err)
		}
	}
}
