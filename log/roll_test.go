package log

import (
	"math"
	"path/filepath"
	"testing"
	"time"
)

func TestShouldRoll(t *testing.T) {
	base := rollInput{
		SegmentSize: 100, SegmentBytes: 1000, BatchSize: 100,
		NowMs: 10_000, CreatedMs: 9_000, RollTimestamp: 5_000, BatchMaxTimestamp: 5_500, SegmentMs: 1_000,
		BaseOffset: 0, LastOffset: 10,
	}
	cases := []struct {
		name string
		mod  func(*rollInput)
		want bool
	}{
		{"fits", func(*rollInput) {}, false},
		{"exactly fills", func(in *rollInput) { in.SegmentSize = 900 }, false},
		{"one byte over", func(in *rollInput) { in.SegmentSize = 901 }, true},
		{"batch timestamp past segment.ms", func(in *rollInput) { in.BatchMaxTimestamp = 6_001 }, true},
		{"batch timestamp at segment.ms", func(in *rollInput) { in.BatchMaxTimestamp = 6_000 }, false},
		{"wall clock ignored when segment has a timestamp", func(in *rollInput) { in.NowMs = 1e9 }, false},
		{"empty segment uses wall clock, but never rolls empty", func(in *rollInput) { in.RollTimestamp, in.SegmentSize, in.NowMs = -1, 0, 1e9 }, false},
		{"no timestamp yet: wall clock", func(in *rollInput) { in.RollTimestamp, in.NowMs = -1, 10_001 }, true},
		{"offset index full", func(in *rollInput) { in.IndexFull = true }, true},
		{"time index full", func(in *rollInput) { in.TimeIndexFull = true }, true},
		{"relative offset overflow", func(in *rollInput) { in.LastOffset = math.MaxInt32 + 1 }, true},
		{"relative offset at max", func(in *rollInput) { in.LastOffset = math.MaxInt32 }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			tc.mod(&in)
			if got := shouldRoll(in); got != tc.want {
				t.Fatalf("shouldRoll(%+v) = %v, want %v", in, got, tc.want)
			}
		})
	}
}

func TestRollBySegmentMsAndRecoveryPoint(t *testing.T) {
	clock := newManualClock()
	cfg := DefaultConfig()
	cfg.SegmentMs = 1000
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	mustAppend(t, l, buildBatch(plainSpec(ts), nRecords(1, 10)), 0)
	mustAppend(t, l, buildBatch(plainSpec(ts+1000), nRecords(1, 10)), 0)
	if l.NumSegments() != 1 {
		t.Fatalf("rolled at exactly segment.ms")
	}
	mustAppend(t, l, buildBatch(plainSpec(ts+1001), nRecords(1, 10)), 0)
	if l.NumSegments() != 2 {
		t.Fatalf("%d segments, want a roll past segment.ms", l.NumSegments())
	}
	// The background flush after the roll moves the recovery point to the
	// new segment's base offset.
	deadline := time.Now().Add(10 * time.Second)
	for l.RecoveryPoint() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("recovery point stuck at %d", l.RecoveryPoint())
		}
		time.Sleep(time.Millisecond)
	}
	if rp := l.RecoveryPoint(); rp != 2 {
		t.Fatalf("recovery point %d, want 2", rp)
	}
}

func TestFlushMessages(t *testing.T) {
	clock := newManualClock()
	cfg := DefaultConfig()
	cfg.FlushMessages = 3
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{})
	defer l.Close()
	mustAppend(t, l, buildBatch(plainSpec(1), nRecords(2, 10)), 0)
	if l.RecoveryPoint() != 0 {
		t.Fatalf("flushed before flush.messages")
	}
	mustAppend(t, l, buildBatch(plainSpec(1), nRecords(1, 10)), 0)
	if l.RecoveryPoint() != 3 {
		t.Fatalf("recovery point %d after flush.messages reached", l.RecoveryPoint())
	}
	cfg.FlushMessages = math.MaxInt64
	cfg.FlushMs = 1000
	l.SetConfig(cfg)
	mustAppend(t, l, buildBatch(plainSpec(1), nRecords(1, 10)), 0)
	if err := l.flushIfDue(); err != nil || l.RecoveryPoint() != 3 {
		t.Fatalf("flushed before flush.ms: %d, %v", l.RecoveryPoint(), err)
	}
	clock.Advance(time.Second)
	if err := l.flushIfDue(); err != nil || l.RecoveryPoint() != 4 {
		t.Fatalf("not flushed after flush.ms: %d, %v", l.RecoveryPoint(), err)
	}
}

// TestRollWhenIndexFull: a tiny segment.index.bytes makes the time index
// (which keeps a slot free) fill first and forces rolls; every roll leaves
// indexes that still agree with the data.
func TestRollWhenIndexFull(t *testing.T) {
	clock := newManualClock()
	cfg := DefaultConfig()
	cfg.SegmentIndexBytes = 384 // 48 offset entries, 32 time entries
	cfg.IndexIntervalBytes = 0  // an entry per batch
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{})
	defer l.Close()
	var model []appended
	for i := 0; i < 100; i++ {
		model = append(model, mustAppend(t, l, buildBatch(plainSpec(int64(i)), nRecords(1, 10)), 0))
	}
	if n := l.NumSegments(); n < 3 {
		t.Fatalf("%d segments: index-full rolls missing", n)
	}
	l.mu.RLock()
	for _, s := range l.segments {
		if len(s.timeIndex.ts) > s.timeIndex.maxEntries || len(s.index.rel) > s.index.maxEntries {
			t.Fatalf("segment %d overfilled its indexes", s.baseOffset)
		}
	}
	l.mu.RUnlock()
	checkAgainstModel(t, l, model)
}
