package log

import (
	"path/filepath"
	"testing"
)

// segment.jitter.ms: each segment draws a jitter in [0, min(segment.jitter.ms,
// segment.ms)) when it is created and rolls that much before segment.ms.
func TestRollJitter(t *testing.T) {
	clock := newManualClock()
	cfg := DefaultConfig()
	cfg.SegmentMs = 1000
	cfg.SegmentJitterMs = 500
	var bounds []int64
	draw := func(n int64) int64 { bounds = append(bounds, n); return n - 1 }
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{Int64N: draw})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	mustAppend(t, l, buildBatch(plainSpec(ts), nRecords(1, 10)), 0)
	// The jitter drawn is 499: the segment rolls once 501ms have passed.
	mustAppend(t, l, buildBatch(plainSpec(ts+501), nRecords(1, 10)), 0)
	if n := l.NumSegments(); n != 1 {
		t.Fatalf("%d segments after 501ms with segment.ms 1000 and jitter 499, want 1", n)
	}
	mustAppend(t, l, buildBatch(plainSpec(ts+502), nRecords(1, 10)), 0)
	if n := l.NumSegments(); n != 2 {
		t.Fatalf("%d segments after 502ms with segment.ms 1000 and jitter 499, want a roll", n)
	}
	if len(bounds) != 2 || bounds[0] != 500 || bounds[1] != 500 {
		t.Errorf("jitter drawn with bounds %v, want 500 for each of the two segments", bounds)
	}

	// The bound is segment.ms when the jitter is larger; no jitter draws
	// nothing.
	cfg.SegmentJitterMs = 5000
	bounds = nil
	l2 := openTestLog(t, filepath.Join(t.TempDir(), "t-1"), cfg, clock, Options{Int64N: draw})
	l2.Close()
	cfg.SegmentJitterMs = 0
	l3 := openTestLog(t, filepath.Join(t.TempDir(), "t-2"), cfg, clock, Options{Int64N: draw})
	l3.Close()
	if len(bounds) != 1 || bounds[0] != 1000 {
		t.Errorf("jitter bounds %v, want only segment.ms 1000", bounds)
	}
}

func TestShouldRollJitter(t *testing.T) {
	in := rollInput{SegmentSize: 100, SegmentBytes: 1 << 20, BatchSize: 10, RollTimestamp: 0, SegmentMs: 1000, RollJitterMs: 300}
	in.BatchMaxTimestamp = 700
	if shouldRoll(in) {
		t.Error("rolled at segment.ms less jitter")
	}
	in.BatchMaxTimestamp = 701
	if !shouldRoll(in) {
		t.Error("no roll past segment.ms less jitter")
	}
}
