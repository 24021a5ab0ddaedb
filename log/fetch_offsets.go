package log

// Offsets is a consistent snapshot of the offsets a fetch answer states:
// log start, high watermark, last stable offset and log end.
type Offsets struct {
	LogStart, HighWatermark, LastStable, LogEnd int64
}

// Offsets reads them under one lock, where LogStartOffset, HighWatermark,
// LastStableOffset and LogEndOffset take it each: an incremental fetch
// compares them for every partition of its session (broker's fetch
// sessions) to find the few that changed.
func (l *Log) Offsets() Offsets {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return Offsets{LogStart: l.logStartOffset, HighWatermark: l.highWatermark, LastStable: l.lastStableOffsetLocked(), LogEnd: l.logEndOffset}
}
