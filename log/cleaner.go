package log

import "math"

// This file is the pure half of the log cleaner (compaction): which part of
// a log is dirty and which log to clean next, as Kafka's LogCleanerManager
// decides it. Time comes in as NowMs; nothing here touches files.

// cleanSegmentInfo is what the choice looks at of one segment.
type cleanSegmentInfo struct {
	BaseOffset int64
	Size       int64
	// FirstBatchTimestamp is the first batch's max timestamp (-1 when the
	// segment is empty): max.compaction.lag.ms counts from it, as Kafka's
	// getFirstBatchTimestamp.
	FirstBatchTimestamp int64
	// LargestTimestamp is the segment's largest timestamp:
	// min.compaction.lag.ms keeps a segment dirty while it is recent.
	LargestTimestamp int64
}

// cleanInput describes one compacted log to the choice.
type cleanInput struct {
	// Segments ascend by base offset; the last is the active one.
	Segments       []cleanSegmentInfo
	LogStartOffset int64
	LogEndOffset   int64
	// StableOffset bounds cleaning: Kafka never cleans past the last stable
	// offset; without transactions that is the high watermark.
	StableOffset int64
	// Checkpoint is the first dirty offset from cleaner-offset-checkpoint,
	// -1 when the log has no entry.
	Checkpoint             int64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64
	MinCleanableDirtyRatio float64
	NowMs                  int64
}

// cleanable is the dirty range of a log and how dirty it is.
type cleanable struct {
	// FirstDirtyOffset is where the uncleaned part starts.
	FirstDirtyOffset int64
	// FirstUncleanableOffset is the base offset of the first segment the
	// cleaner must not touch (the active segment, the segment holding the
	// stable offset, or the first one within min.compaction.lag.ms).
	FirstUncleanableOffset int64
	// CleanBytes and CleanableBytes are the sizes of the segments below the
	// first dirty offset and of those in the dirty range; a segment holding
	// the first dirty offset counts in both, as in Kafka's LogToClean.
	CleanBytes, CleanableBytes int64
	Ratio                      float64
	// NeedCompactionNow: the oldest dirty record is older than
	// max.compaction.lag.ms, so the log is cleaned whatever its ratio.
	NeedCompactionNow bool
	// ResetCheckpoint: the checkpoint was outside the log and was replaced
	// by the log start offset.
	ResetCheckpoint bool
}

// cleanableRange applies Kafka's cleanableOffsets, maxCompactionDelay and
// calculateCleanableBytes to one log.
func cleanableRange(in cleanInput) cleanable {
	var c cleanable
	c.FirstDirtyOffset = in.Checkpoint
	if in.Checkpoint < 0 {
		c.FirstDirtyOffset = in.LogStartOffset
	} else if in.Checkpoint < in.LogStartOffset || in.Checkpoint > in.LogEndOffset {
		c.FirstDirtyOffset, c.ResetCheckpoint = in.LogStartOffset, true
	}
	if len(in.Segments) == 0 {
		c.FirstUncleanableOffset = c.FirstDirtyOffset
		return c
	}
	activeBase := in.Segments[len(in.Segments)-1].BaseOffset
	uncleanable := min(in.StableOffset, activeBase)
	nonActive := in.Segments[:len(in.Segments)-1]
	dirty := nonActive[segmentFloor(nonActive, c.FirstDirtyOffset):]
	if lag := max(in.MinCompactionLagMs, 0); lag > 0 {
		for _, s := range dirty {
			if s.LargestTimestamp > in.NowMs-lag {
				uncleanable = min(uncleanable, s.BaseOffset)
				break
			}
		}
	}
	// The uncleanable offset rounds down to the start of its segment (an
	// offset before the first segment means the first one).
	c.FirstUncleanableOffset = activeBase
	if uncleanable < activeBase && len(nonActive) > 0 {
		c.FirstUncleanableOffset = nonActive[segmentFloor(nonActive, uncleanable)].BaseOffset
	}
	lo := min(c.FirstDirtyOffset, c.FirstUncleanableOffset)
	for i, s := range in.Segments {
		upper := in.LogEndOffset
		if i+1 < len(in.Segments) {
			upper = in.Segments[i+1].BaseOffset
		}
		if s.BaseOffset < c.FirstDirtyOffset {
			c.CleanBytes += s.Size
		}
		if upper > lo && s.BaseOffset < c.FirstUncleanableOffset {
			c.CleanableBytes += s.Size
		}
	}
	if total := c.CleanBytes + c.CleanableBytes; total > 0 {
		c.Ratio = float64(c.CleanableBytes) / float64(total)
	}
	earliest := int64(math.MaxInt64)
	for _, s := range dirty {
		if s.FirstBatchTimestamp > 0 {
			earliest = min(earliest, s.FirstBatchTimestamp)
		}
	}
	if earliest < in.NowMs-max(in.MaxCompactionLagMs, 0) {
		c.NeedCompactionNow = true
	}
	return c
}

// segmentFloor returns the index of the segment holding offset (the last
// with base offset <= offset), or 0 when offset precedes them all.
func segmentFloor(segs []cleanSegmentInfo, offset int64) int {
	i := 0
	for j, s := range segs {
		if s.BaseOffset <= offset {
			i = j
		}
	}
	return i
}

// shouldClean is Kafka's filter in grabFilthiestCompactedLog: a log past
// max.compaction.lag.ms with anything to clean, or one whose dirty ratio
// exceeds min.cleanable.dirty.ratio.
func shouldClean(c cleanable, minRatio float64) bool {
	return (c.NeedCompactionNow && c.CleanableBytes > 0) || c.Ratio > minRatio
}

// filthiest returns the index of the log to clean next, the one with the
// highest dirty ratio among those shouldClean accepts; ok is false when no
// log needs cleaning.
func filthiest(ins []cleanInput) (best int, c cleanable, ok bool) {
	for i, in := range ins {
		ci := cleanableRange(in)
		if !shouldClean(ci, in.MinCleanableDirtyRatio) {
			continue
		}
		if !ok || ci.Ratio > c.Ratio {
			best, c, ok = i, ci, true
		}
	}
	return best, c, ok
}
