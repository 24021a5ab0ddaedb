package log

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/brook-mq/brook/protocol/batch"
)

type tsRecord struct{ offset, ts int64 }

// TestOffsetForTimestampMatchesModel appends batches with random, partly
// out-of-order timestamps (some compressed) and compares the time-index
// search with Kafka's rule computed naively: within the first segment whose
// max timestamp reaches the target, the first record with timestamp >=
// target.
func TestOffsetForTimestampMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	clock := newManualClock()
	cfg := smallConfig()
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{})
	defer l.Close()
	codecs := batch.MustCodecs()
	var recs []tsRecord
	segOf := map[int64]int64{}
	next := int64(0)
	for i := 0; i < 200; i++ {
		n := 1 + rng.IntN(5)
		base := int64(10_000 + i*10 + rng.IntN(30) - 15)
		var brecs []batch.Record
		for j := 0; j < n; j++ {
			brecs = append(brecs, batch.Record{TimestampDelta: int64(rng.IntN(40)), OffsetDelta: int32(j), Value: make([]byte, rng.IntN(200))})
		}
		codec := batch.None
		if rng.IntN(3) == 0 {
			codec = batch.Gzip
		}
		b, err := batch.Build(batch.BuildOptions{BaseTimestamp: base, Compression: codec, PartitionLeaderEpoch: -1}, brecs, codecs)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, b, 0)
		for j, r := range brecs {
			recs = append(recs, tsRecord{next + int64(j), base + r.TimestampDelta})
		}
		next += int64(n)
	}
	segBase := segmentBaseFunc(l)
	for o := int64(0); o < next; o++ {
		segOf[o] = segBase(o)
	}
	leo := l.LogEndOffset()
	for i := 0; i < 500; i++ {
		target := int64(9_900 + rng.IntN(2_200))
		maxOffset := rng.Int64N(leo + 10)
		// Naive model: segment max timestamps, then first record in it.
		segMax := map[int64]int64{}
		var order []int64
		for _, r := range recs {
			s := segOf[r.offset]
			if _, ok := segMax[s]; !ok {
				order = append(order, s)
				segMax[s] = -1
			}
			segMax[s] = max(segMax[s], r.ts)
		}
		wantFound := false
		var wantOff, wantTs int64
		for _, s := range order {
			if segMax[s] < target {
				continue
			}
			for _, r := range recs {
				if segOf[r.offset] == s && r.ts >= target {
					wantOff, wantTs, wantFound = r.offset, r.ts, true
					break
				}
			}
			break
		}
		if wantFound && wantOff >= maxOffset {
			wantFound = false
		}
		off, ts, found, err := l.OffsetForTimestamp(target, maxOffset)
		if err != nil {
			t.Fatal(err)
		}
		if found != wantFound || (found && (off != wantOff || ts != wantTs)) {
			t.Fatalf("OffsetForTimestamp(%d, %d) = %d, %d, %v; want %d, %d, %v", target, maxOffset, off, ts, found, wantOff, wantTs, wantFound)
		}
	}
	// MaxTimestamp: the largest timestamp and the first record carrying it.
	var best tsRecord = tsRecord{-1, -1}
	for _, r := range recs {
		if r.ts > best.ts {
			best = r
		}
	}
	if ts, off := l.MaxTimestamp(); ts != best.ts || off != best.offset {
		t.Fatalf("MaxTimestamp = %d at %d; want %d at %d", ts, off, best.ts, best.offset)
	}
}

func TestMaxTimestampEmptyAndLogAppendTime(t *testing.T) {
	clock := newManualClock()
	cfg := DefaultConfig()
	cfg.LogAppendTime = true
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{})
	defer l.Close()
	if ts, off := l.MaxTimestamp(); ts != -1 || off != -1 {
		t.Fatalf("empty log: %d, %d", ts, off)
	}
	if _, _, found, _ := l.OffsetForTimestamp(0, math.MaxInt64); found {
		t.Fatalf("found a timestamp in an empty log")
	}
	mustAppend(t, l, buildBatch(plainSpec(1), nRecords(3, 1)), 0)
	now := clock.Now().UnixMilli()
	if ts, off := l.MaxTimestamp(); ts != now || off != 0 {
		t.Fatalf("LogAppendTime batch: %d at %d, want %d at 0", ts, off, now)
	}
	if off, ts, found, _ := l.OffsetForTimestamp(now, math.MaxInt64); !found || off != 0 || ts != now {
		t.Fatalf("OffsetForTimestamp(now) = %d, %d, %v", off, ts, found)
	}
}
