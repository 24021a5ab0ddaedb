package log

import (
	"fmt"

	"github.com/brook-mq/brook/protocol/batch"
)

// AppendAsFollower appends batches that already carry offsets and leader
// epochs (replication). It checks framing and CRC and that offsets only
// move forward from the log end offset, then updates the producer state
// and the epoch cache without the client-side sequence checks.
//
// The data batches of one answer go to the segment in one write, as
// Kafka's follower appends a fetched record set (a write per batch was
// 16% of a follower's CPU under replicated produce): a run of batches is
// written at once when none of them would roll the segment, then each is
// indexed and applied in order. A control batch (a transaction marker,
// whose abort entry depends on the batches before it) and a batch that
// rolls the segment go alone. Batches before an invalid one are appended,
// and the error returned.
func (l *Log) AppendAsFollower(b []byte) (AppendInfo, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	info := AppendInfo{FirstOffset: -1, LastOffset: -1, LogAppendTime: -1, LogStartOffset: l.LogStartOffset()}
	hs, invalid := followerBatches(l.followerHdrs[:0], b, l.logEndOffset, l.cfg.SegmentBytes)
	if cap(hs) <= followerHdrsMax {
		l.followerHdrs = hs[:0] // the loop below reslices hs
	}
	for len(hs) > 0 {
		n, size, logStart, err := l.appendRunLocked(b, hs)
		if err != nil {
			return info, err
		}
		if info.FirstOffset < 0 {
			info.FirstOffset = hs[0].BaseOffset
		}
		for i := range hs[:n] {
			info.RecordCount += hs[i].RecordCount
		}
		info.LastOffset = hs[n-1].LastOffset()
		info.LogStartOffset = logStart
		b, hs = b[size:], hs[n:]
	}
	return info, invalid
}

// followerHdrsMax bounds the header scratch a log keeps between follower
// appends, so that one answer of many batches does not pin its memory.
const followerHdrsMax = 1024

// followerBatches parses and checks the batches of b, from the log end
// offset next on, and returns, appended to hs, the headers of the valid
// ones before the first invalid one, and its error.
func followerBatches(hs []batch.Header, b []byte, next, segmentBytes int64) ([]batch.Header, error) {
	for len(b) > 0 {
		h, err := batch.ParseHeader(b)
		if err != nil {
			return hs, classifyBatchError(err)
		}
		if h.Size() > len(b) {
			return hs, fmt.Errorf("%w: %w: batch of %d bytes, %d present", ErrCorrupt, batch.ErrTruncated, h.Size(), len(b))
		}
		if err := batch.CheckCRC(b[:h.Size()], &h); err != nil {
			return hs, classifyBatchError(err)
		}
		if h.BaseOffset < next || h.LastOffsetDelta < 0 {
			return hs, fmt.Errorf("%w: follower batch offsets %d..%d, log end offset %d", ErrInvalidRecord, h.BaseOffset, h.LastOffset(), next)
		}
		if int64(h.Size()) > segmentBytes {
			return hs, fmt.Errorf("%w: batch of %d bytes", ErrRecordListTooLarge, h.Size())
		}
		hs = append(hs, h)
		next = h.LastOffset() + 1
		b = b[h.Size():]
	}
	return hs, nil
}

// appendRunLocked appends hs[0] and the data batches after it that go in
// the same write (followerRun), from the start of b, and returns how many
// batches and bytes it appended and the log start offset. The caller
// holds appendMu.
func (l *Log) appendRunLocked(b []byte, hs []batch.Header) (n, size int, _ int64, err error) {
	h := &hs[0]
	if h.Control() {
		logStart, err := l.appendBatchLocked(b[:h.Size()], h)
		return 1, h.Size(), logStart, err
	}
	defer func() { l.ioFailed(err) }()
	if err = l.rewriteStaleEpochs(); err != nil {
		return 0, 0, 0, err
	}
	cfg := l.cfg
	nowMs := l.now().UnixMilli()
	s, err := l.segmentFor(h, h.Size(), cfg, nowMs)
	if err != nil {
		return 0, 0, 0, err
	}
	n = followerRun(s, hs, cfg, nowMs)
	for i := range hs[:n] {
		size += hs[i].Size()
	}
	start := s.size
	if err = l.writeSegment(s, b[:size], start); err != nil {
		return 0, 0, 0, err
	}
	l.mu.Lock()
	epochChanged, indexErr := false, error(nil)
	pos := start
	for i := range hs[:n] {
		changed, err := l.publishBatchLocked(s, &hs[i], pos, nil)
		epochChanged = epochChanged || changed
		pos += int64(hs[i].Size())
		if err != nil {
			// The log ends with this batch, as a batch appended alone
			// would: the ones after it are cut from the file.
			indexErr, n, size = err, i+1, int(pos-start)
			if terr := s.log.Truncate(pos); terr != nil {
				indexErr = fmt.Errorf("%w (and cutting the batches after it: %w)", err, terr)
			}
			break
		}
	}
	logStart, err := l.finishAppend(s, epochChanged, indexErr)
	return n, size, logStart, err
}

// followerRun is how many of hs, from the first (which fits s, rolled if
// needed), go in one write to s: data batches for which shouldRoll, given
// the segment as the batches before them in the run leave it, says no.
// Each batch adds at most one entry to each index, so the run is bounded
// by the room the indexes have.
func followerRun(s *segment, hs []batch.Header, cfg Config, nowMs int64) int {
	room := min(s.index.maxEntries-len(s.index.rel), s.timeIndex.maxEntries-1-len(s.timeIndex.ts))
	size := s.size + int64(hs[0].Size())
	rollTimestamp := s.rollTimestamp
	if rollTimestamp < 0 {
		rollTimestamp = hs[0].MaxTimestamp
	}
	n := 1
	for ; n < len(hs) && n < room; n++ {
		h := &hs[n]
		if h.Control() {
			break
		}
		in := rollInputFor(s, h, h.Size(), cfg, nowMs)
		in.SegmentSize, in.RollTimestamp = size, rollTimestamp
		in.IndexFull, in.TimeIndexFull = false, false
		if shouldRoll(in) {
			break
		}
		size += int64(h.Size())
	}
	return n
}
