package batch

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
)

// benchRecords returns records of about 16 KiB in total, with values that
// compress as ordinary JSON-ish payloads do (roughly 3-5x).
func benchRecords() ([]Record, int) {
	rng := rand.New(rand.NewPCG(11, 12))
	var recs []Record
	size := 0
	for i := 0; size < 16<<10; i++ {
		v := fmt.Sprintf(`{"id":%d,"user":"u%05d","amount":%d.%02d,"status":"ok","tags":["a","b"]}`,
			i, rng.IntN(100000), rng.IntN(1000), rng.IntN(100))
		r := Record{OffsetDelta: int32(i), TimestampDelta: int64(i / 10), Key: []byte(fmt.Sprintf("k%06d", i)), Value: []byte(v)}
		recs = append(recs, r)
		size += int(bodySize(&r)) + 2
	}
	return recs, size
}

// BenchmarkValidate reports MB/s of uncompressed records validated.
func BenchmarkValidate(b *testing.B) {
	codecs := MustCodecs()
	recs, _ := benchRecords()
	for _, codec := range allCodecs {
		batch, err := Build(BuildOptions{Compression: codec, BaseTimestamp: 1_700_000_000_000}, recs, codecs)
		if err != nil {
			b.Fatal(err)
		}
		res, err := Check(batch, ValidateOptions{Codecs: codecs})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%s/%dB", codec, len(batch)), func(b *testing.B) {
			opts := ValidateOptions{Codecs: codecs, MaxMessageBytes: 1 << 20, KeyRequired: true}
			b.SetBytes(res.UncompressedBytes)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Validate(batch, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBuild(b *testing.B) {
	codecs := MustCodecs()
	recs, size := benchRecords()
	for _, codec := range allCodecs {
		b.Run(codec.String(), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(BuildOptions{Compression: codec}, recs, codecs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkReadRecords(b *testing.B) {
	codecs := MustCodecs()
	recs, size := benchRecords()
	for _, codec := range []Compression{None, LZ4, Zstd} {
		batch, err := Build(BuildOptions{Compression: codec}, recs, codecs)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(codec.String(), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := ReadRecords(batch, codecs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateSmall validates a batch of 1,000 unkeyed 100-byte
// records, the issue-18 produce workload (BenchmarkProduceApply in broker
// runs the same batch through the whole produce path): ns/op / 1,000 is
// the validation cost per record.
func BenchmarkValidateSmall(b *testing.B) {
	codecs := MustCodecs()
	rng := rand.New(rand.NewPCG(1, 2))
	recs := make([]Record, 1000)
	for i := range recs {
		v := make([]byte, 100)
		for j := range v {
			v[j] = 'a' + byte(rng.IntN(26))
		}
		recs[i] = Record{OffsetDelta: int32(i), Value: v}
	}
	// snappy is the Java producer's xerial framing (Brook's own encoder),
	// snappy-raw one raw block, as franz-go and librdkafka send it.
	for _, name := range []string{"none", "snappy", "snappy-raw", "lz4", "zstd"} {
		codec := map[string]Compression{"none": None, "snappy": Snappy, "snappy-raw": None, "lz4": LZ4, "zstd": Zstd}[name]
		batch, err := Build(BuildOptions{Compression: codec, BaseTimestamp: 1_700_000_000_000}, recs, codecs)
		if err != nil {
			b.Fatal(err)
		}
		if name == "snappy-raw" {
			batch = rawSnappy(b, batch)
		}
		b.Run(name, func(b *testing.B) {
			opts := ValidateOptions{Codecs: codecs, MaxMessageBytes: 1 << 20}
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			cpu0 := testutil.ProcessCPU(b)
			for b.Loop() {
				if _, err := Validate(batch, opts); err != nil {
					b.Fatal(err)
				}
			}
			testutil.ReportCPUPerOp(b, cpu0)
		})
	}
}
