package batch

import (
	"io"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestParsersAgree is a differential property test: the same records
// section, mutated at random, must get the same verdict whether it is
// parsed from memory (uncompressed) or streamed through a decompressor,
// and whether records are kept (ReadRecords) or skipped (Validate).
func TestParsersAgree(t *testing.T) {
	codecs := mustCodecs(t)
	rng := rand.New(rand.NewPCG(21, 22))
	recs := sampleRecords(8, rng)
	good, err := Build(BuildOptions{}, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	clean := good[HeaderSize:]
	counts := map[int16]int{}
	defer func() { t.Logf("verdicts: %v", counts) }()
	for iter := range 400 {
		raw := append([]byte(nil), clean...)
		for range 1 + rng.IntN(3) {
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
		var wantCode int16
		var wantRecs []Record
		for i, codec := range []Compression{None, Gzip, Zstd, Snappy} {
			b := craft(t, hdr(8, codec), raw, codecs)
			_, err := Validate(b, ValidateOptions{Codecs: codecs})
			code := KafkaCode(err)
			_, got, rerr := ReadRecords(b, codecs)
			if rcode := KafkaCode(rerr); rcode != code {
				t.Fatalf("iteration %d %s: Validate says %d (%v), ReadRecords %d (%v)", iter, codec, code, err, rcode, rerr)
			}
			if rerr != nil {
				got = nil
			}
			if i == 0 {
				counts[code]++
				wantCode, wantRecs = code, got
				continue
			}
			if code != wantCode {
				t.Fatalf("iteration %d: %s says %d (%v), uncompressed says %d", iter, codec, code, err, wantCode)
			}
			if !reflect.DeepEqual(got, wantRecs) {
				t.Fatalf("iteration %d: %s reads other records", iter, codec)
			}
		}
	}
}

func TestRecordReaderSticky(t *testing.T) {
	codecs := mustCodecs(t)
	b := craft(t, hdr(2, Gzip), record(body(0, 0, "k", "v")), codecs) // one record short
	r, err := Records(b, codecs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err1 := r.Next()
	_, err2 := r.Next()
	if err1 == nil || err1 != err2 || err1 == io.EOF {
		t.Fatalf("errors %v then %v, want the same non-EOF error", err1, err2)
	}
	r.Close()
	if _, err := r.Next(); err == nil {
		t.Fatal("Next after Close succeeded")
	}
}
