package log

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// readByWalk is the model of Read within one segment: every batch header
// from the log's start, the first batch holding offset, then whole batches
// below maxOffset within maxBytes (the first one regardless with
// minOneBatch).
type walkedBatch struct {
	pos, size, base, last int64
}

func readByWalk(batches []walkedBatch, offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (pos, size, last int64) {
	i := 0
	for i < len(batches) && batches[i].last < offset {
		i++
	}
	if i == len(batches) {
		return 0, 0, -1
	}
	pos, last = batches[i].pos, -1
	for ; i < len(batches); i++ {
		b := batches[i]
		if b.last >= maxOffset || size+b.size > int64(max(maxBytes, 0)) && !(size == 0 && minOneBatch) {
			break
		}
		size += b.size
		last = b.last
	}
	return pos, size, last
}

// TestReadThroughIndexMatchesWalk checks Read, which skips ahead through
// the offset index, against a walk of every batch header, over batches of
// random sizes and index intervals from every batch to none, at random
// offsets, byte limits and high watermarks.
func TestReadThroughIndexMatchesWalk(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 1))
	for _, interval := range []int32{0, 100, 4096, 64 << 10, math.MaxInt32} {
		cfg := DefaultConfig()
		cfg.IndexIntervalBytes = interval
		l := openTestLog(t, filepath.Join(t.TempDir(), "read-0"), cfg, testutil.NewClock(time.UnixMilli(1000)), Options{})
		var batches []walkedBatch
		pos := int64(0)
		for range 300 {
			bt := buildBatch(plainSpec(1000), nRecords(1+rng.IntN(20), rng.IntN(2000)))
			info, err := l.Append(bt, 0)
			if err != nil {
				t.Fatal(err)
			}
			batches = append(batches, walkedBatch{pos: pos, size: int64(len(bt)), base: info.FirstOffset, last: info.LastOffset})
			pos += int64(len(bt))
		}
		leo := l.LogEndOffset()
		for range 3000 {
			offset := rng.Int64N(leo)
			maxBytes := int32(rng.IntN(200 << 10))
			maxOffset := leo
			if rng.IntN(2) == 0 {
				maxOffset = offset + rng.Int64N(leo-offset+1)
			}
			minOne := rng.IntN(2) == 0
			s, err := l.Read(offset, maxBytes, maxOffset, minOne)
			if err != nil {
				t.Fatal(err)
			}
			wantPos, wantSize, wantLast := readByWalk(batches, offset, maxBytes, maxOffset, minOne)
			if offset >= maxOffset {
				wantSize = 0
			}
			if int64(s.Size) != wantSize || wantSize > 0 && (s.Pos != wantPos || s.LastOffset != wantLast) {
				t.Fatalf("interval %d: Read(%d, %d, %d, %v) = pos %d size %d last %d, want pos %d size %d last %d",
					interval, offset, maxBytes, maxOffset, minOne, s.Pos, s.Size, s.LastOffset, wantPos, wantSize, wantLast)
			}
		}
		l.Close()
	}
}
