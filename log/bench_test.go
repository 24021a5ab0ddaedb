package log

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/brook-mq/brook/protocol/batch"
)

// The benchmarks write 16 KiB batches of 1 KiB records. Run them with
// fixed counts so the data stays at 256 MiB on this small machine:
//
//	go test -run XXX -bench 'Append|RawWrite|Read' -benchtime 16384x ./log/
//	go test -run XXX -bench Recover -benchtime 3x ./log/
//	go test -run XXX -bench Clean -benchtime 3x ./log/

func benchBatch() []byte { return buildBatch(plainSpec(time.Now().UnixMilli()), nRecords(16, 1000)) }

// benchConfig is Kafka's default: 1 GiB segments, so 256 MiB never rolls
// and Append is measured without the background fsync that follows a roll.
func benchConfig() Config { return DefaultConfig() }

func BenchmarkAppend(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "bench-0"), benchConfig(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	bt := benchBatch()
	b.SetBytes(int64(len(bt)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		batch.SetBaseOffset(bt, 0) // Kafka rejects produced batches with another base offset
		if _, err := l.Append(bt, 0); err != nil {
			b.Fatal(err)
		}
	}
	// Close fsyncs everything; the raw write below does not sync either.
	b.StopTimer()
	l.Close()
}

// BenchmarkRawWrite writes the same bytes sequentially to a plain file:
// the ceiling Append is compared with.
func BenchmarkRawWrite(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
	if err != nil {
		b.Fatal(err)
	}
	bt := benchBatch()
	b.SetBytes(int64(len(bt)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.Write(bt); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	f.Close()
}

// benchLog64 is a log of 64 MiB of 16 KiB batches, closed at the end of
// the benchmark.
func benchLog64(b *testing.B) *Log {
	l, err := Open(filepath.Join(b.TempDir(), "bench-0"), benchConfig(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	bt := benchBatch()
	for i := 0; i < 4096; i++ {
		batch.SetBaseOffset(bt, 0)
		if _, err := l.Append(bt, 0); err != nil {
			b.Fatal(err)
		}
	}
	return l
}

// BenchmarkRead reads 1 MiB from random offsets of a 64 MiB log into a
// reused buffer (the page cache is warm, as for tailing consumers).
func BenchmarkRead(b *testing.B) {
	l := benchLog64(b)
	leo := l.LogEndOffset()
	rng := rand.New(rand.NewPCG(1, 1))
	var buf []byte
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i++ {
		s, err := l.Read(rng.Int64N(leo), 1<<20, math.MaxInt64, true)
		if err != nil {
			b.Fatal(err)
		}
		if buf, err = s.ReadInto(buf[:0]); err != nil {
			b.Fatal(err)
		}
		n += int64(len(buf))
	}
	b.SetBytes(n / int64(b.N))
}

// BenchmarkReadSlice finds the region a 1 MiB fetch sends from random
// offsets of a 64 MiB log of 16 KiB batches, without reading the records
// (the broker sendfiles them): the work of resolving a fetch. "hw" bounds
// the read by a high watermark in the middle of the log, as for a fetch
// that reaches uncommitted data.
func BenchmarkReadSlice(b *testing.B) {
	l := benchLog64(b)
	leo := l.LogEndOffset()
	for _, bc := range []struct {
		name string
		hw   int64
	}{{"leo", math.MaxInt64}, {"hw", leo/2 + 7}} {
		b.Run(bc.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			var n int64
			for b.Loop() {
				s, err := l.Read(rng.Int64N(leo), 1<<20, bc.hw, true)
				if err != nil {
					b.Fatal(err)
				}
				n += int64(s.Size)
			}
			b.SetBytes(n / int64(b.N))
		})
	}
}

// recoverBytes sizes BenchmarkRecover's log: 256 MiB keeps `go test -bench`
// short; the figure is for 1 GiB (-recover-bytes=1073741824).
var recoverBytes = flag.Int64("recover-bytes", 256<<20, "size of the log BenchmarkRecover recovers")

// BenchmarkRecover measures opening a log of -recover-bytes after an
// unclean stop with no recovery point: every batch is read and CRC-checked
// and the indexes and producer state are rebuilt. Each iteration is one
// recovery.
func BenchmarkRecover(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "bench-0")
	cfg := benchConfig()
	l, err := Open(dir, cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	bt := benchBatch()
	var size int64
	for size < *recoverBytes {
		batch.SetBaseOffset(bt, 0)
		if _, err := l.Append(bt, 0); err != nil {
			b.Fatal(err)
		}
		size += int64(len(bt))
	}
	leo := l.LogEndOffset()
	crash(l)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := Open(dir, cfg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if l.LogEndOffset() != leo {
			b.Fatalf("recovered LEO %d, want %d", l.LogEndOffset(), leo)
		}
		b.StopTimer()
		crash(l)
		b.StartTimer()
	}
}

// cleanBytes sizes BenchmarkClean's dirty log.
var cleanBytes = flag.Int64("clean-bytes", 64<<20, "size of the dirty log BenchmarkClean compacts")

// BenchmarkClean measures the cleaner: each iteration writes -clean-bytes
// of 16 KiB batches (16 records of 1 KiB over 16384 keys, so each key is
// overwritten about four times per 64 MiB) in 16 MiB segments, untimed,
// then compacts it with one offset map of Kafka's default per-thread
// size. MB/s is dirty bytes cleaned per second; map-bytes is the offset
// map's peak size.
func BenchmarkClean(b *testing.B) {
	cfg := benchConfig()
	cfg.SegmentBytes = 16 << 20
	cfg.Compact, cfg.Delete = true, false
	recs := make([]batch.Record, 16)
	value := make([]byte, 1000)
	var dirty, mapBytes int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "clean-0")
		l, err := Open(dir, cfg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		var size int64
		for size < *cleanBytes {
			for j := range recs {
				recs[j] = batch.Record{OffsetDelta: int32(j), Key: fmt.Appendf(nil, "key-%05d", rng.IntN(16384)), Value: value}
			}
			bt, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli()}, recs, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := l.Append(bt, 0); err != nil {
				b.Fatal(err)
			}
			size += int64(len(bt))
		}
		l.SetHighWatermark(l.LogEndOffset())
		l.mu.RLock()
		c := cleanableRange(l.cleanInputLocked(time.Now().UnixMilli()))
		l.mu.RUnlock()
		m := newOffsetMap(128<<20, 0.9) // log.cleaner.dedupe.buffer.size / 1 thread
		b.StartTimer()
		stats, err := l.clean(cleanEnv{offsets: m}, c)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		dirty += c.CleanableBytes
		mapBytes = max(mapBytes, stats.MapMemoryBytes)
		if i == 0 {
			b.Logf("cleaned %d dirty bytes in %d segments to %d bytes; %d of %d records kept; map %d entries, %d bytes",
				c.CleanableBytes, stats.SegmentsCleaned, stats.BytesWritten, stats.RecordsKept, stats.RecordsRead, stats.MapEntries, stats.MapMemoryBytes)
		}
		l.Close()
		b.StartTimer()
	}
	b.SetBytes(dirty / int64(b.N))
	b.ReportMetric(float64(mapBytes), "map-bytes")
}
