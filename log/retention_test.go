package log

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fillSegments appends one 1-record batch per segment (segment.bytes is
// tiny) with the given timestamps, and sets the high watermark to the end.
func fillSegments(t *testing.T, l *Log, timestamps []int64) {
	t.Helper()
	for _, ts := range timestamps {
		mustAppend(t, l, buildBatch(plainSpec(ts), nRecords(1, 100)), 0)
	}
	l.SetHighWatermark(l.LogEndOffset())
}

func oneBatchPerSegment() Config {
	c := smallConfig()
	c.SegmentBytes = 200 // one ~180-byte batch per segment
	return c
}

func TestRetention(t *testing.T) {
	cases := []struct {
		name        string
		cfg         func(*Config)
		timestamps  []int64 // relative to now, ms
		hw          int64   // -1: LEO
		wantDeleted int
	}{
		{"ms: old segments go, active stays", func(c *Config) { c.RetentionMs = 1000 }, []int64{-5000, -4000, -500, -5000}, -1, 2},
		{"ms: stops at first young segment", func(c *Config) { c.RetentionMs = 1000 }, []int64{-5000, -10, -5000, -5000}, -1, 1},
		{"ms: -1 keeps all", func(c *Config) { c.RetentionMs = -1 }, []int64{-5e9, -5e9, -5e9}, -1, 0},
		// Kafka rolls and deletes a due active segment too.
		{"ms: the active segment too, once due", func(c *Config) { c.RetentionMs = 1 }, []int64{-5e9, -5e9, -5e9}, -1, 3},
		{"ms: not past the high watermark", func(c *Config) { c.RetentionMs = 1 }, []int64{-5e9, -5e9, -5e9, -5e9}, 1, 1},
		// Kafka deletes while the excess still covers a whole segment: five
		// ~171-byte segments over a 400-byte limit lose two.
		{"bytes: keep within limit", func(c *Config) { c.RetentionMs = -1; c.RetentionBytes = 400 }, []int64{0, 0, 0, 0, 0}, -1, 2},
		{"compact only: no retention", func(c *Config) { c.RetentionMs = 1; c.Compact = true; c.Delete = false }, []int64{-5e9, -5e9}, -1, 0},
		{"compact,delete: retention", func(c *Config) { c.RetentionMs = 1; c.Compact = true; c.Delete = true }, []int64{-5e9, -5e9}, -1, 2},
		// Kafka applies retention only when cleanup.policy has delete: an
		// empty policy keeps everything too.
		{"empty policy: no retention", func(c *Config) { c.RetentionMs = 1; c.Compact = false; c.Delete = false }, []int64{-5e9, -5e9}, -1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := newManualClock()
			cfg := oneBatchPerSegment()
			tc.cfg(&cfg)
			l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{})
			defer l.Close()
			now := clock.Now().UnixMilli()
			var abs []int64
			for _, d := range tc.timestamps {
				abs = append(abs, now+d)
			}
			fillSegments(t, l, abs)
			if got := l.NumSegments(); got != len(abs) {
				t.Fatalf("setup: %d segments, want %d", got, len(abs))
			}
			if tc.hw >= 0 {
				l.SetHighWatermark(tc.hw)
			}
			n, err := l.DeleteOldSegments()
			if err != nil || n != tc.wantDeleted {
				t.Fatalf("deleted %d (%v), want %d", n, err, tc.wantDeleted)
			}
			if l.LogStartOffset() != int64(n) {
				t.Fatalf("log start %d, want %d", l.LogStartOffset(), n)
			}
			if _, err := l.Read(int64(n)-1, 1000, math.MaxInt64, true); n > 0 && !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("read below log start: %v", err)
			}
		})
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	clock := newManualClock()
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), oneBatchPerSegment(), clock, Options{})
	defer l.Close()
	fillSegments(t, l, []int64{1, 2, 3, 4, 5})
	l.SetHighWatermark(4)
	if _, err := l.DeleteRecordsBefore(5); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("above HW: %v", err)
	}
	if _, err := l.DeleteRecordsBefore(-2); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("negative: %v", err)
	}
	got, err := l.DeleteRecordsBefore(2)
	if err != nil || got != 2 || l.NumSegments() != 3 {
		t.Fatalf("DeleteRecordsBefore(2) = %d, %v; %d segments", got, err, l.NumSegments())
	}
	if got, _ := l.DeleteRecordsBefore(1); got != 2 {
		t.Fatalf("moving back: log start %d", got)
	}
	got, err = l.DeleteRecordsBefore(-1)
	if err != nil || got != 4 {
		t.Fatalf("DeleteRecordsBefore(HW) = %d, %v", got, err)
	}
	// Offset 4 starts a segment: 2 and 3 are gone, the active one stays.
	if l.NumSegments() != 1 {
		t.Fatalf("%d segments left", l.NumSegments())
	}
}

// TestDeletedSegmentStaysReadable: a Slice taken before retention deletes
// its segment stays readable until file.delete.delay.ms has passed.
func TestDeletedSegmentStaysReadable(t *testing.T) {
	clock := newManualClock()
	cfg := oneBatchPerSegment()
	cfg.FileDeleteDelayMs = 60000
	cfg.RetentionMs = 1
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openTestLog(t, dir, cfg, clock, Options{})
	defer l.Close()
	fillSegments(t, l, []int64{1, 2, 3})
	s, err := l.Read(0, 1000, math.MaxInt64, true)
	if err != nil || s.Size == 0 {
		t.Fatalf("read: %v", err)
	}
	want := readAllSlice(t, s)
	// All three are due, the active one included (Kafka rolls and deletes it).
	if n, err := l.DeleteOldSegments(); n != 3 || err != nil {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if _, err := os.Stat(offsetFileName(dir, 0, logSuffix+deletedSuffix)); err != nil {
		t.Fatalf("segment not renamed .deleted: %v", err)
	}
	clock.Advance(59 * time.Second)
	if err := l.deleteExpiredSegments(); err != nil {
		t.Fatal(err)
	}
	if got := readAllSlice(t, s); string(got) != string(want) {
		t.Fatalf("slice changed after deletion")
	}
	clock.Advance(time.Second)
	if err := l.deleteExpiredSegments(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(offsetFileName(dir, 0, logSuffix+deletedSuffix)); !os.IsNotExist(err) {
		t.Fatalf("segment still present after delay: %v", err)
	}
	if _, err := s.ReadInto(nil); err == nil {
		t.Fatalf("slice of a removed segment still readable")
	}
}

func TestTruncateTo(t *testing.T) {
	clock := newManualClock()
	cfg := smallConfig()
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openTestLog(t, dir, cfg, clock, Options{})
	var model []appended
	spec := batchSpec{baseTimestamp: 1, producerID: 9, producerEpoch: 0}
	for i := 0; i < 60; i++ {
		spec.baseSequence = int32(2 * i)
		model = append(model, mustAppend(t, l, buildBatch(spec, nRecords(2, 300)), int32(i/20)))
	}
	l.SetHighWatermark(l.LogEndOffset())
	// Cut in the middle of batch 30 (offsets 60, 61): the whole batch goes.
	if err := l.TruncateTo(61); err != nil {
		t.Fatal(err)
	}
	checkAgainstModel(t, l, model[:30])
	if l.HighWatermark() != 60 {
		t.Fatalf("HW %d after truncation", l.HighWatermark())
	}
	if e, o := l.EndOffsetForEpoch(2); e != -1 || o != -1 {
		t.Fatalf("epoch 2 survived truncation: %d, %d", e, o)
	}
	if e, o := l.EndOffsetForEpoch(1); e != 1 || o != 60 {
		t.Fatalf("EndOffsetForEpoch(1) = %d, %d; want 1, 60", e, o)
	}
	// Producer state rolled back: sequence 60 is next again.
	spec.baseSequence = 60
	info, err := l.Append(buildBatch(spec, nRecords(2, 300)), 1)
	if err != nil || info.Duplicate || info.FirstOffset != 60 {
		t.Fatalf("append after truncation: %+v, %v", info, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, cfg, clock, Options{})
	defer l.Close()
	if l.LogEndOffset() != 62 {
		t.Fatalf("LEO %d after reopen", l.LogEndOffset())
	}
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	clock := newManualClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openTestLog(t, dir, smallConfig(), clock, Options{})
	for i := 0; i < 40; i++ {
		mustAppend(t, l, buildBatch(plainSpec(1), nRecords(2, 300)), 1)
	}
	if err := l.TruncateFullyAndStartAt(1000); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1000 || l.HighWatermark() != 1000 || l.NumSegments() != 1 {
		t.Fatalf("start %d end %d hw %d segments %d", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(), l.NumSegments())
	}
	if e, _ := l.EndOffsetForEpoch(1); e != -1 {
		t.Fatalf("epoch cache not cleared")
	}
	info := mustAppend(t, l, buildBatch(plainSpec(1), nRecords(1, 3)), 2)
	if info.first != 1000 {
		t.Fatalf("first offset %d", info.first)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, smallConfig(), clock, Options{LogStartOffset: 1000})
	defer l.Close()
	if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1001 {
		t.Fatalf("after reopen start %d end %d", l.LogStartOffset(), l.LogEndOffset())
	}
}

// TestRetentionDeletesTheActiveSegment: a topic that stopped receiving
// records still loses them once they are due, as in Kafka: the active
// segment is rolled and deleted when it is non-empty and below the high
// watermark, and appends carry on at the log end offset.
func TestRetentionDeletesTheActiveSegment(t *testing.T) {
	clock := newManualClock()
	cfg := DefaultConfig()
	cfg.RetentionMs = 1000
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{})
	defer l.Close()
	fillSegments(t, l, []int64{clock.Now().UnixMilli(), clock.Now().UnixMilli()})
	if l.NumSegments() != 1 {
		t.Fatalf("%d segments before retention, want one active", l.NumSegments())
	}
	end := l.LogEndOffset()
	l.SetHighWatermark(end - 1)
	clock.Advance(time.Hour)
	if n, err := l.DeleteOldSegments(); n != 0 || err != nil {
		t.Fatalf("deleted %d (%v) while the high watermark is inside the active segment", n, err)
	}
	l.SetHighWatermark(end)
	if n, err := l.DeleteOldSegments(); n != 1 || err != nil {
		t.Fatalf("deleted %d, %v; want the due active segment", n, err)
	}
	if l.LogStartOffset() != end || l.LogEndOffset() != end || l.NumSegments() != 1 {
		t.Fatalf("log [%d, %d) with %d segments, want an empty log at %d", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments(), end)
	}
	// An empty active segment is never deleted again.
	if n, err := l.DeleteOldSegments(); n != 0 || err != nil {
		t.Fatalf("deleted %d (%v) of an empty log", n, err)
	}
	fillSegments(t, l, []int64{clock.Now().UnixMilli()})
	if l.LogEndOffset() <= end {
		t.Fatalf("append after retention: log end %d", l.LogEndOffset())
	}
}
