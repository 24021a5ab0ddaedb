package log

import (
	"math"
	"testing"
)

// segs builds segments of 100 bytes at the given base offsets, with first
// and largest timestamps equal to the base offset (the test clock counts
// offsets as milliseconds), the last being the active one.
func segs(bases ...int64) []cleanSegmentInfo {
	out := make([]cleanSegmentInfo, len(bases))
	for i, b := range bases {
		out[i] = cleanSegmentInfo{BaseOffset: b, Size: 100, FirstBatchTimestamp: b + 1, LargestTimestamp: b + 9}
	}
	return out
}

func TestCleanableRange(t *testing.T) {
	base := cleanInput{
		Segments: segs(0, 10, 20, 30), LogEndOffset: 35, StableOffset: 35, Checkpoint: -1,
		MaxCompactionLagMs: math.MaxInt64, MinCleanableDirtyRatio: 0.5, NowMs: 1000,
	}
	tests := []struct {
		name string
		edit func(*cleanInput)
		want cleanable
	}{
		{"no checkpoint: everything but the active segment is dirty", func(*cleanInput) {},
			cleanable{FirstDirtyOffset: 0, FirstUncleanableOffset: 30, CleanBytes: 0, CleanableBytes: 300, Ratio: 1}},
		{"checkpoint at a segment boundary", func(in *cleanInput) { in.Checkpoint = 20 },
			cleanable{FirstDirtyOffset: 20, FirstUncleanableOffset: 30, CleanBytes: 200, CleanableBytes: 100, Ratio: 1.0 / 3}},
		{"checkpoint inside a segment counts it on both sides", func(in *cleanInput) { in.Checkpoint = 15 },
			cleanable{FirstDirtyOffset: 15, FirstUncleanableOffset: 30, CleanBytes: 200, CleanableBytes: 200, Ratio: 0.5}},
		{"checkpoint at the active segment: nothing dirty", func(in *cleanInput) { in.Checkpoint = 30 },
			cleanable{FirstDirtyOffset: 30, FirstUncleanableOffset: 30, CleanBytes: 300, CleanableBytes: 0, Ratio: 0}},
		{"checkpoint below the log start resets", func(in *cleanInput) { in.Checkpoint = 5; in.LogStartOffset = 10; in.Segments = segs(10, 20, 30) },
			cleanable{FirstDirtyOffset: 10, FirstUncleanableOffset: 30, CleanBytes: 0, CleanableBytes: 200, Ratio: 1, ResetCheckpoint: true}},
		{"checkpoint past the log end resets", func(in *cleanInput) { in.Checkpoint = 99 },
			cleanable{FirstDirtyOffset: 0, FirstUncleanableOffset: 30, CleanableBytes: 300, Ratio: 1, ResetCheckpoint: true}},
		{"stable offset inside a segment stops at its start", func(in *cleanInput) { in.StableOffset = 25 },
			cleanable{FirstDirtyOffset: 0, FirstUncleanableOffset: 20, CleanableBytes: 200, Ratio: 1}},
		{"stable offset at the log start: nothing", func(in *cleanInput) { in.StableOffset = 0 },
			cleanable{FirstDirtyOffset: 0, FirstUncleanableOffset: 0, CleanableBytes: 0, Ratio: 0}},
		{"min.compaction.lag.ms keeps recent segments dirty", func(in *cleanInput) { in.MinCompactionLagMs = 1000 - 15 },
			// now - lag = 15: segment 10 (largest 19) is too recent.
			cleanable{FirstDirtyOffset: 0, FirstUncleanableOffset: 10, CleanableBytes: 100, Ratio: 1}},
		{"max.compaction.lag.ms not yet passed", func(in *cleanInput) { in.Checkpoint = 20; in.MaxCompactionLagMs = 1000 - 20 },
			// now - lag = 20: the first dirty record (21) is not older.
			cleanable{FirstDirtyOffset: 20, FirstUncleanableOffset: 30, CleanBytes: 200, CleanableBytes: 100, Ratio: 1.0 / 3}},
		{"max.compaction.lag.ms passed by the oldest dirty record", func(in *cleanInput) { in.Checkpoint = 20; in.MaxCompactionLagMs = 1000 - 22 },
			cleanable{FirstDirtyOffset: 20, FirstUncleanableOffset: 30, CleanBytes: 200, CleanableBytes: 100, Ratio: 1.0 / 3, NeedCompactionNow: true}},
		{"only the active segment", func(in *cleanInput) { in.Segments = segs(0); in.LogEndOffset = 5 },
			cleanable{FirstDirtyOffset: 0, FirstUncleanableOffset: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base
			in.Segments = append([]cleanSegmentInfo(nil), base.Segments...)
			tt.edit(&in)
			if got := cleanableRange(in); got != tt.want {
				t.Errorf("cleanableRange = %+v\nwant            %+v", got, tt.want)
			}
		})
	}
}

func TestFilthiest(t *testing.T) {
	mk := func(checkpoint int64, ratio float64, maxLag int64) cleanInput {
		return cleanInput{Segments: segs(0, 10, 20, 30, 40), LogEndOffset: 45, StableOffset: 45, Checkpoint: checkpoint,
			MaxCompactionLagMs: maxLag, MinCleanableDirtyRatio: ratio, NowMs: 1000}
	}
	never := int64(math.MaxInt64)
	tests := []struct {
		name   string
		in     []cleanInput
		want   int
		wantOK bool
	}{
		{"none", nil, 0, false},
		{"all clean", []cleanInput{mk(40, 0.5, never)}, 0, false},
		// checkpoint 20: ratio 2/4 = 0.5, not above 0.5 (Kafka's strict >).
		{"ratio equal to the minimum is not enough", []cleanInput{mk(20, 0.5, never)}, 0, false},
		{"dirtiest wins", []cleanInput{mk(30, 0.1, never), mk(10, 0.5, never), mk(20, 0.4, never)}, 1, true},
		{"max lag overrides the ratio", []cleanInput{mk(30, 0.9, never), mk(30, 0.9, 1)}, 1, true},
		{"max lag with nothing cleanable", []cleanInput{mk(40, 0.9, 1)}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, ok := filthiest(tt.in)
			if ok != tt.wantOK || (ok && got != tt.want) {
				t.Errorf("filthiest = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
