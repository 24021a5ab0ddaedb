package log

import (
	"fmt"
	"os"

	"github.com/brook-mq/brook/protocol/batch"
)

// DeleteRecordsBefore moves the log start offset to offset (-1: the high
// watermark) for DeleteRecords and deletes the segments wholly below it.
// An offset above the high watermark is ErrOffsetOutOfRange; one below the
// current log start offset changes nothing. It returns the log start offset.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	l.mu.Lock()
	if offset == -1 {
		offset = l.highWatermark
	}
	if offset < 0 || offset > l.highWatermark {
		hw := l.highWatermark
		l.mu.Unlock()
		return 0, fmt.Errorf("%w: delete records before %d, high watermark %d", ErrOffsetOutOfRange, offset, hw)
	}
	var epochs []epochEntry
	if offset > l.logStartOffset {
		l.logStartOffset = offset
		if l.epochs.truncateFromStart(offset) {
			epochs = l.epochs.snapshot()
		}
	}
	l.mu.Unlock()
	if epochs != nil {
		if err := l.writeEpochCheckpoint(epochs); err != nil {
			return 0, err
		}
	}
	if _, err := l.deleteSegmentsLocked(func(_ *segment, upper int64) bool { return upper <= offset }); err != nil {
		return 0, err
	}
	return l.LogStartOffset(), nil
}

// DeleteOldSegments applies retention.ms, retention.bytes and the log start
// offset, deleting whole inactive segments from the oldest on; it returns
// how many it deleted. Only topics whose cleanup.policy has delete are
// subject to retention, as in Kafka: compacted-only topics keep their
// segments (the cleaner, not retention, shrinks them), and so do topics
// with an empty policy.
func (l *Log) DeleteOldSegments() (int, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	cfg := l.cfg
	nowMs := l.now().UnixMilli()
	total := 0
	if cfg.Delete {
		if cfg.RetentionMs >= 0 {
			n, err := l.deleteSegmentsLocked(func(s *segment, _ int64) bool { return nowMs-s.largestTimestamp() > cfg.RetentionMs })
			total += n
			if err != nil {
				return total, err
			}
		}
		if cfg.RetentionBytes >= 0 {
			diff := l.Size() - cfg.RetentionBytes
			n, err := l.deleteSegmentsLocked(func(s *segment, _ int64) bool {
				if diff-s.size >= 0 {
					diff -= s.size
					return true
				}
				return false
			})
			total += n
			if err != nil {
				return total, err
			}
		}
	}
	logStart := l.LogStartOffset()
	n, err := l.deleteSegmentsLocked(func(_ *segment, upper int64) bool { return upper <= logStart })
	return total + n, err
}

// deleteSegmentsLocked deletes the oldest segments while pred holds for
// the segment and its upper bound (the next segment's base offset, or the
// log end offset for the active one), never one holding offsets at or
// above the high watermark. As in Kafka, the active segment goes too when
// it is non-empty, wholly below the high watermark and due: a new empty
// segment is rolled first, so a quiet topic's records still expire. The
// caller holds appendMu.
func (l *Log) deleteSegmentsLocked(pred func(s *segment, upper int64) bool) (int, error) {
	l.mu.Lock()
	n := 0
	for n < len(l.segments) {
		s := l.segments[n]
		upper, active := l.logEndOffset, n == len(l.segments)-1
		if !active {
			upper = l.segments[n+1].baseOffset
		}
		if upper > l.highWatermark || (active && s.size == 0) || !pred(s, upper) {
			break
		}
		n++
	}
	if n == 0 {
		l.mu.Unlock()
		return 0, nil
	}
	if n == len(l.segments) {
		l.mu.Unlock()
		if err := l.rollLocked(); err != nil {
			return 0, fmt.Errorf("roll before deleting the active segment: %w", err)
		}
		l.mu.Lock()
	}
	dropped := append([]*segment(nil), l.segments[:n]...)
	l.segments = append([]*segment(nil), l.segments[n:]...)
	l.logStartOffset = max(l.logStartOffset, l.segments[0].baseOffset)
	l.recoveryPoint = max(l.recoveryPoint, l.logStartOffset)
	var epochs []epochEntry
	if l.epochs.truncateFromStart(l.logStartOffset) {
		epochs = l.epochs.snapshot()
	}
	err := l.scheduleDeleteLocked(dropped)
	firstBase := l.segments[0].baseOffset
	l.mu.Unlock()
	l.logger.Info("deleted segments", "count", n, "log_start_offset", l.LogStartOffset())
	if err != nil {
		return n, err
	}
	if epochs != nil {
		if err := l.writeEpochCheckpoint(epochs); err != nil {
			return n, err
		}
	}
	return n, l.removeSnapshotsBelow(firstBase)
}

func (l *Log) removeSnapshotsBelow(offset int64) error {
	snaps, err := listSnapshots(l.fs, l.dir)
	if err != nil {
		return err
	}
	for _, o := range snaps {
		if o < offset {
			if err := l.fs.Remove(offsetFileName(l.dir, o, snapshotSuffix)); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("remove snapshot %d: %w", o, err)
			}
		}
	}
	return nil
}

// RemoveExpiredProducers drops the idempotence state of producers idle for
// producer.id.expiration.ms; the Manager calls it periodically.
func (l *Log) RemoveExpiredProducers(expirationMs int64) int {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return 0
	}
	return l.producers.removeExpired(l.now().UnixMilli(), expirationMs)
}

// TruncateTo removes every batch at or after offset (a follower cutting a
// divergent tail). A batch containing offset is removed whole. An offset
// below the log start offset empties the log and restarts it at offset.
// An offset at or past the log end keeps every batch but still drops the
// leader epochs that start at the log end, as Kafka's truncateTo does:
// a broker elected leader records its epoch's start there, and if it
// wrote nothing before it followed again, that epoch, newer than the
// leader's, would stay the latest and the first batch fetched from the
// leader, of an older epoch, would replace every entry of its epoch and
// above, moving that epoch's start to the log end.
func (l *Log) TruncateTo(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOffsetOutOfRange, offset)
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if offset >= l.logEndOffset {
		l.mu.Lock()
		changed := l.epochs.truncateFromEnd(l.logEndOffset)
		epochs := l.epochs.snapshot()
		l.mu.Unlock()
		if !changed {
			return nil
		}
		if err := l.writeEpochCheckpoint(epochs); err != nil {
			return fmt.Errorf("truncate %s to %d: epochs at the log end: %w", l.tp, offset, err)
		}
		return nil
	}
	if offset < l.logStartOffset {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.truncateFullyLocked(offset)
	}
	l.mu.Lock()
	keep := len(l.segments)
	for keep > 1 && l.segments[keep-1].baseOffset > offset {
		keep--
	}
	dropped := append([]*segment(nil), l.segments[keep:]...)
	l.segments = l.segments[:keep]
	s := l.active()
	err := l.truncateSegment(s, offset)
	if err == nil {
		err = s.txnIndex.truncateTo(s.nextOffset)
	}
	if err == nil {
		err = s.preallocate()
	}
	l.logEndOffset = s.nextOffset
	l.truncateCleanerCheckpointLocked(l.logEndOffset)
	l.highWatermark = min(l.highWatermark, l.logEndOffset)
	l.recoveryPoint = min(l.recoveryPoint, l.logEndOffset)
	l.epochs.truncateFromEnd(l.logEndOffset)
	epochs := l.epochs.snapshot()
	if derr := l.scheduleDeleteLocked(dropped); err == nil {
		err = derr
	}
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("truncate %s to %d: %w", l.tp, offset, err)
	}
	if err := l.writeEpochCheckpoint(epochs); err != nil {
		return err
	}
	return l.rebuildProducerState(l.logEndOffset)
}

// truncateSegment cuts s before the first batch whose last offset is >=
// offset and recomputes its in-memory state from the remaining headers.
func (l *Log) truncateSegment(s *segment, offset int64) error {
	var hdr [batch.HeaderSize]byte
	pos, _, found, err := s.findBatch(hdr[:], offset)
	if err != nil {
		return err
	}
	if !found {
		pos = s.size
	}
	if err := s.log.Truncate(pos); err != nil {
		return err
	}
	if err := s.index.truncateToPosition(pos); err != nil {
		return err
	}
	s.size, s.nextOffset, s.bytesSinceIndex = 0, s.baseOffset, 0
	s.maxTimestamp, s.maxTimestampOffset, s.rollTimestamp = -1, -1, -1
	for p := int64(0); p < pos; {
		h, err := s.readHeaderAt(hdr[:], p, pos)
		if err != nil {
			return err
		}
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.maxTimestampOffset = h.MaxTimestamp, h.LastOffset()
		}
		if s.rollTimestamp < 0 {
			s.rollTimestamp = h.MaxTimestamp
		}
		s.nextOffset = h.LastOffset() + 1
		p += int64(h.Size())
	}
	s.size = pos
	s.bytesSinceIndex = pos - s.index.lookup(s.nextOffset).Position
	return s.timeIndex.truncateToOffset(s.nextOffset)
}

// TruncateFullyAndStartAt empties the log and restarts it at offset (a
// follower whose leader no longer has its offsets).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: start at %d", ErrOffsetOutOfRange, offset)
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.truncateFullyLocked(offset)
}

// truncateFullyLocked holds appendMu and mu (or runs during Open).
func (l *Log) truncateFullyLocked(offset int64) error {
	dropped := l.segments
	l.segments = nil
	if err := l.scheduleDeleteLocked(dropped); err != nil {
		return err
	}
	s, err := createSegment(l.fs, l.files, l.dir, offset, l.cfg, l.now())
	if err != nil {
		return err
	}
	s.rollJitterMs = l.segmentJitter()
	l.segments = []*segment{s}
	l.logEndOffset, l.logStartOffset, l.highWatermark, l.recoveryPoint = offset, offset, offset, offset
	l.cleanerCheckpoint = 0
	l.epochs = epochCache{}
	l.producers = newProducerState()
	l.unstable = nil
	if err := l.writeEpochCheckpoint(nil); err != nil {
		return err
	}
	return l.removeSnapshotsBelow(1<<63 - 1)
}
