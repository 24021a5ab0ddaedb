package log

import "math/rand/v2"

// segmentJitter draws the time a new or reopened segment rolls early, as
// Kafka's LogConfig.randomSegmentJitter: uniform in [0, min(segment.jitter.ms,
// segment.ms)), so that partitions created together do not all roll at
// once. The caller holds appendMu or owns the log.
func (l *Log) segmentJitter() int64 {
	n := min(l.cfg.SegmentJitterMs, l.cfg.SegmentMs)
	if n <= 0 {
		return 0
	}
	if l.int64N != nil {
		return l.int64N(n)
	}
	return rand.Int64N(n)
}
