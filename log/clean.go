package log

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/brook-mq/brook/protocol/batch"
)

// This file is the cleaner's rewrite of one log, Kafka's Cleaner.doClean:
// build the offset map over the dirty range, then rewrite the segments
// from the log start up to the last offset the map covers, keeping for
// each key only the record at its latest offset, and swap the rewritten
// segments in with a crash-safe rename protocol:
//
//  1. write <base>.log.cleaned (+ .index.cleaned, .timeindex.cleaned), fsync;
//  2. rename them to .swap, the .log last; once <base>.log.swap exists the
//     new segment is committed (recovery completes the swap);
//  3. rename the replaced segments to .deleted (removed after
//     file.delete.delay.ms, as retention does);
//  4. rename the .swap files to their final names.
//
// Recovery (completeSwaps) deletes .cleaned files and finishes any .swap,
// so a crash leaves either the old segments or the new ones, never both.

// errCleanAborted reports that the log changed under the cleaner (its
// segments were deleted or truncated); the cleaning is retried later.
var errCleanAborted = errors.New("log: cleaning aborted: the log changed")

// CleanStats describe one cleaning.
type CleanStats struct {
	EndOffset                int64 // the new cleaner checkpoint
	BytesRead, BytesWritten  int64
	RecordsRead, RecordsKept int64
	SegmentsCleaned, Groups  int
	MapEntries               int
	MapMemoryBytes           int64
}

// cleanEnv is what a cleaning borrows from its cleaner thread.
type cleanEnv struct {
	offsets *offsetMap
	// throttle is called with the bytes read or written
	// (log.cleaner.io.max.bytes.per.second); nil does not throttle.
	throttle func(n int64)
	// aborted are the aborted transactions of the range being cleaned.
	aborted abortedSet
}

// segSnap is a segment as the cleaner saw it when it started.
type segSnap struct {
	seg                        *segment
	size, nextOffset           int64
	indexBytes, timeIndexBytes int64
	modTime                    time.Time
}

// cleanInputLocked describes the log to the pure choice; the caller holds
// at least mu for reading.
func (l *Log) cleanInputLocked(nowMs int64) cleanInput {
	in := cleanInput{
		LogStartOffset: l.logStartOffset, LogEndOffset: l.logEndOffset, StableOffset: l.lastStableOffsetLocked(),
		Checkpoint: l.cleanerCheckpoint, MinCompactionLagMs: l.cfg.MinCompactionLagMs,
		MaxCompactionLagMs: l.cfg.MaxCompactionLagMs, MinCleanableDirtyRatio: l.cfg.MinCleanableDirtyRatio, NowMs: nowMs,
	}
	if in.Checkpoint <= 0 {
		in.Checkpoint = -1
	}
	for _, s := range l.segments {
		in.Segments = append(in.Segments, cleanSegmentInfo{
			BaseOffset: s.baseOffset, Size: s.size, FirstBatchTimestamp: s.rollTimestamp, LargestTimestamp: s.largestTimestamp(),
		})
	}
	return in
}

// CleanerCheckpoint is the cleaner's first dirty offset, 0 if never cleaned.
func (l *Log) CleanerCheckpoint() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cleanerCheckpoint
}

// truncateCleanerCheckpointLocked keeps the checkpoint at or below offset
// after a truncation, as Kafka's maybeTruncateCheckpoint; the caller holds mu.
func (l *Log) truncateCleanerCheckpointLocked(offset int64) {
	l.cleanerCheckpoint = min(l.cleanerCheckpoint, offset)
}

// clean compacts the dirty range c of the log once and moves the cleaner
// checkpoint to the end of what the offset map covered.
func (l *Log) clean(env cleanEnv, c cleanable) (CleanStats, error) {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return CleanStats{}, ErrClosed
	}
	cfg := l.cfg
	var snaps []segSnap
	for _, s := range l.segments[:len(l.segments)-1] {
		var mod time.Time
		if st, err := s.log.Stat(); err == nil {
			mod = st.ModTime()
		}
		snaps = append(snaps, segSnap{
			seg: s, size: s.size, nextOffset: s.nextOffset, modTime: mod,
			indexBytes: int64(s.index.entries()) * offsetEntrySize, timeIndexBytes: int64(len(s.timeIndex.ts)) * timeEntrySize,
		})
	}
	// Every transaction below the first uncleanable offset (at most the
	// last stable offset) is decided; the aborted ones' records are
	// neither mapped nor kept, as in Kafka's cleaner.
	env.aborted = l.abortedTxnsLocked(l.logStartOffset, c.FirstUncleanableOffset)
	l.mu.RUnlock()
	nowMs := l.now().UnixMilli()
	var stats CleanStats
	end, err := l.buildOffsetMap(env, snaps, c.FirstDirtyOffset, c.FirstUncleanableOffset, &stats)
	if err != nil {
		return stats, err
	}
	stats.MapEntries, stats.MapMemoryBytes = env.offsets.size(), env.offsets.memoryBytes()
	if end <= c.FirstDirtyOffset {
		return stats, nil
	}
	lastOfProducer := l.lastBatchOfProducers()
	txns := newCleanTxns(env.aborted)
	var toClean []segSnap
	for _, s := range snaps {
		if s.seg.baseOffset < end {
			toClean = append(toClean, s)
		}
	}
	for _, group := range groupBySize(toClean, cfg, c.FirstUncleanableOffset) {
		if err := l.cleanGroup(env, group, cfg, nowMs, lastOfProducer, txns, &stats); err != nil {
			return stats, err
		}
		stats.Groups++
		stats.SegmentsCleaned += len(group)
	}
	stats.EndOffset = end
	l.mu.Lock()
	// A truncation while cleaning aborts the swap of any segment it cut;
	// the bound keeps the checkpoint inside the log regardless.
	l.cleanerCheckpoint = min(end, l.logEndOffset)
	l.mu.Unlock()
	return stats, nil
}

// producerLast is what the cleaner keeps of an active producer.
type producerLast struct {
	lastData int64 // the last data batch's last offset, -1 if none
	epoch    int16
}

// lastBatchOfProducers returns each producer's last data batch: Kafka
// keeps that batch, emptied if need be, so that the producer's sequence
// and epoch survive compaction; a producer with no data batch keeps its
// markers of its current epoch instead (isBatchLastRecordOfProducer).
func (l *Log) lastBatchOfProducers() map[int64]producerLast {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	out := make(map[int64]producerLast, len(l.producers.producers))
	for id, e := range l.producers.producers {
		p := producerLast{lastData: -1, epoch: e.Epoch}
		if n := len(e.Batches); n > 0 {
			p.lastData = e.Batches[n-1].LastOffset
		}
		out[id] = p
	}
	return out
}

// isLastOfProducer is Kafka's isBatchLastRecordOfProducer.
func isLastOfProducer(h *batch.Header, lastOfProducer map[int64]producerLast) bool {
	p, ok := lastOfProducer[h.ProducerID]
	if !h.HasProducerID() || !ok {
		return false
	}
	if p.lastData >= 0 {
		return h.LastOffset() == p.lastData
	}
	return h.Control() && h.ProducerEpoch == p.epoch
}

// readBatch reads and checks the batch at pos of s; corruption is ErrCorrupt,
// a segment deleted under the cleaner errCleanAborted.
func (l *Log) readBatch(s segSnap, pos int64, buf []byte, env cleanEnv) (batch.Header, []byte, error) {
	var hdr [batch.HeaderSize]byte
	h, err := s.seg.readHeaderAt(hdr[:], pos, s.size)
	if err == nil {
		if cap(buf) < h.Size() {
			buf = make([]byte, h.Size())
		}
		buf = buf[:h.Size()]
		if _, err = s.seg.log.ReadAt(buf, pos); err == nil {
			err = batch.CheckCRC(buf, &h)
		}
	}
	if err != nil {
		l.mu.RLock()
		gone := s.seg.deleted || l.closed
		l.mu.RUnlock()
		if gone {
			return h, buf, errCleanAborted
		}
		if errors.Is(err, batch.ErrCorrupt) || errors.Is(err, batch.ErrTruncated) || errors.Is(err, batch.ErrUnsupportedMagic) {
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return h, buf, fmt.Errorf("clean %s: segment %d position %d: %w", l.tp, s.seg.baseOffset, pos, err)
	}
	if env.throttle != nil {
		env.throttle(int64(h.Size()))
	}
	return h, buf, nil
}

// readRecords decodes a checked batch; a bad records section, or offset
// deltas that do not increase within the batch's range (the rewrite keeps
// them), is ErrCorrupt.
func (l *Log) readRecords(s segSnap, pos int64, b []byte) ([]batch.Record, error) {
	h, recs, err := batch.ReadRecords(b, l.codecs)
	for i := 0; err == nil && i < len(recs); i++ {
		d := recs[i].OffsetDelta
		if d < 0 || d > h.LastOffsetDelta || (i > 0 && d <= recs[i-1].OffsetDelta) {
			err = fmt.Errorf("record %d has offset delta %d in a batch of deltas 0..%d", i, d, h.LastOffsetDelta)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("clean %s: segment %d position %d: %w: %w", l.tp, s.seg.baseOffset, pos, ErrCorrupt, err)
	}
	return recs, nil
}

// buildOffsetMap fills env.offsets with the latest offset of each key in
// [start, upper), segment by segment, until the map is full (Kafka's
// buildOffsetMapForSegment). It returns the end of what the map covers.
func (l *Log) buildOffsetMap(env cleanEnv, snaps []segSnap, start, upper int64, stats *CleanStats) (int64, error) {
	m := env.offsets
	m.clear()
	var buf []byte
	for _, s := range snaps {
		if s.seg.baseOffset >= upper {
			break
		}
		if s.nextOffset <= start {
			continue
		}
		l.mu.RLock() // the index is shared with flushes and truncation
		from := s.seg.index.lookup(start).Position
		l.mu.RUnlock()
		for pos := from; pos < s.size; {
			h, b, err := l.readBatch(s, pos, buf, env)
			if err != nil {
				return 0, err
			}
			buf = b
			stats.BytesRead += int64(h.Size())
			if !h.Control() && !env.aborted.contains(&h) {
				recs, err := l.readRecords(s, pos, b)
				if err != nil {
					return 0, err
				}
				for _, r := range recs {
					if off := h.BaseOffset + int64(r.OffsetDelta); r.Key != nil && off >= start && !m.put(r.Key, off) {
						return m.latestOffset + 1, nil
					}
				}
			}
			if h.LastOffset() >= start {
				m.updateLatestOffset(h.LastOffset())
			}
			pos += int64(h.Size())
		}
	}
	return m.latestOffset + 1, nil
}

// groupBySize is Kafka's groupSegmentsBySize: consecutive segments whose
// sizes, and index sizes, add up to at most segment.bytes and
// segment.index.bytes, and whose offsets fit 4-byte relative offsets from
// the group's base, are rewritten into one segment.
func groupBySize(snaps []segSnap, cfg Config, firstUncleanable int64) [][]segSnap {
	var groups [][]segSnap
	for len(snaps) > 0 {
		g := snaps[:1]
		logSize, idx, tidx := snaps[0].size, snaps[0].indexBytes, snaps[0].timeIndexBytes
		snaps = snaps[1:]
		for len(snaps) > 0 {
			n := snaps[0]
			last := firstUncleanable - 1
			if len(snaps) > 1 {
				last = snaps[1].seg.baseOffset - 1
			}
			if logSize+n.size > cfg.SegmentBytes || idx+n.indexBytes > int64(cfg.SegmentIndexBytes) ||
				tidx+n.timeIndexBytes > int64(cfg.SegmentIndexBytes) || (n.size > 0 && last-g[0].seg.baseOffset > math.MaxInt32) {
				break
			}
			g = g[:len(g)+1]
			logSize, idx, tidx = logSize+n.size, idx+n.indexBytes, tidx+n.timeIndexBytes
			snaps = snaps[1:]
		}
		groups = append(groups, g)
	}
	return groups
}

// cleanGroup rewrites one group of segments into a .cleaned segment and
// swaps it in.
func (l *Log) cleanGroup(env cleanEnv, group []segSnap, cfg Config, nowMs int64, lastOfProducer map[int64]producerLast, txns *cleanTxns, stats *CleanStats) error {
	base := group[0].seg.baseOffset
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := l.fs.Remove(offsetFileName(l.dir, base, suf+cleanedSuffix)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("clean %s: %w", l.tp, err)
		}
	}
	dst, err := openSegmentFilesSuffix(l.fs, l.files, l.dir, base, cleanedSuffix, cfg, l.now())
	if err == nil {
		err = dst.preallocate()
	}
	if err != nil {
		if dst != nil {
			dst.removeFiles()
		}
		return fmt.Errorf("clean %s: %w", l.tp, err)
	}
	committed := false
	defer func() {
		if !committed {
			dst.removeFiles()
		}
	}()
	var buf []byte
	var mod time.Time
	// A group of one segment whose every batch comes out as it went in is
	// left in place: its copy would be the same bytes, and swapping it in
	// would keep the old files open for file.delete.delay.ms. Kafka
	// rewrites it; with small segments cleaned often (a busy
	// __consumer_offsets) those open files ran Brook out of descriptors.
	unchanged := len(group) == 1
	written := stats.BytesWritten
	// The .txnindex entries of the kept ABORT markers, in log order.
	var txnEntries []AbortedTxn
	for gi, s := range group {
		mod = maxTime(mod, s.modTime)
		for pos := int64(0); pos < s.size; {
			h, b, err := l.readBatch(s, pos, buf, env)
			if err != nil {
				return err
			}
			buf = b
			stats.BytesRead += int64(h.Size())
			// Kafka keeps a group's ending offsets: when the group's last
			// batch goes and the rewrite would end before the last
			// segment's base offset, an empty batch stands in for it, so
			// that recovery of an interrupted swap (which replaces the
			// segments within the new segment's offsets) finds every
			// replaced segment. See completeSwaps.
			lastOfGroup := gi == len(group)-1 && pos+int64(h.Size()) >= s.size && dst.nextOffset <= s.seg.baseOffset
			var out []byte
			var kept int
			if h.Control() {
				var keepTxn *AbortedTxn
				out, keepTxn, err = l.filterMarker(s, pos, h, b, txns, nowMs, cfg.DeleteRetentionMs, lastOfProducer, lastOfGroup)
				if keepTxn != nil {
					txnEntries = append(txnEntries, *keepTxn)
				}
				if len(out) > batch.HeaderSize { // kept, not emptied
					kept = int(h.RecordCount)
				}
			} else {
				txns.onBatch(&h)
				out, kept, err = l.filterBatch(s, pos, h, b, env.offsets, nowMs, cfg.DeleteRetentionMs, lastOfProducer, lastOfGroup, env.aborted.contains(&h))
			}
			if err != nil {
				return err
			}
			stats.RecordsRead += int64(h.RecordCount)
			stats.RecordsKept += int64(kept)
			if unchanged && !bytes.Equal(out, b) {
				unchanged = false
			}
			if out != nil {
				if err := writeCleanedBatch(dst, out, cfg); err != nil {
					return fmt.Errorf("clean %s: %w", l.tp, err)
				}
				stats.BytesWritten += int64(len(out))
				if env.throttle != nil {
					env.throttle(int64(len(out)))
				}
			}
			pos += int64(h.Size())
		}
	}
	if unchanged {
		l.mu.RLock()
		unchanged = slices.Equal(txnEntries, group[0].seg.txnIndex.entries)
		l.mu.RUnlock()
	}
	if unchanged {
		stats.BytesWritten = written
		return nil // the deferred removeFiles drops the copy
	}
	for _, a := range txnEntries {
		if err := dst.txnIndex.write(a); err != nil {
			return fmt.Errorf("clean %s: %w", l.tp, err)
		}
		dst.txnIndex.entries = append(dst.txnIndex.entries, a)
	}
	if err := dst.onBecomeInactive(); err != nil {
		return fmt.Errorf("clean %s: %w", l.tp, err)
	}
	if err := dst.sync(); err != nil {
		return fmt.Errorf("clean %s: %w", l.tp, err)
	}
	// As Kafka, the cleaned segment keeps the replaced segments' last
	// modification time, which retention falls back on.
	if !mod.IsZero() {
		_ = l.fs.Chtimes(dst.paths()[0], mod, mod)
	}
	if err := l.runHook("cleaned"); err != nil {
		committed = true // a simulated crash leaves the files
		return err
	}
	committed, err = l.swapIn(dst, group)
	return err
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// writeCleanedBatch appends b to the cleaned segment and indexes it.
func writeCleanedBatch(dst *segment, b []byte, cfg Config) error {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return err
	}
	if _, err := dst.log.WriteAt(b, dst.size); err != nil {
		return fmt.Errorf("write cleaned segment %d: %w", dst.baseOffset, err)
	}
	if dst.index.isFull() || dst.timeIndex.isFull() {
		// Grouping bounds the indexes by the old ones', so this takes a
		// changed index.interval.bytes; a sparser index is still correct,
		// so stop adding entries rather than fail the cleaning.
		dst.bytesSinceIndex = math.MinInt64 / 2
	}
	return dst.indexBatch(&h, dst.size, cfg.IndexIntervalBytes)
}

// filterBatch applies Kafka's cleaner filter to one batch and returns the
// bytes to write (nil: the batch goes) and how many records it kept.
func (l *Log) filterBatch(s segSnap, pos int64, h batch.Header, b []byte, m *offsetMap, nowMs, deleteRetentionMs int64,
	lastOfProducer map[int64]producerLast, keepEmpty, aborted bool) ([]byte, int, error) {
	var recs []batch.Record
	if !aborted {
		// An aborted transaction's records all go, as in Kafka.
		var err error
		if recs, err = l.readRecords(s, pos, b); err != nil {
			return nil, 0, err
		}
	}
	horizon, hasHorizon := h.DeleteHorizonMs()
	kept := recs[:0:0]
	tombstones := false
	for _, r := range recs {
		if shouldRetainRecord(m, h.BaseOffset+int64(r.OffsetDelta), r, hasHorizon, horizon, nowMs) {
			kept = append(kept, r)
			tombstones = tombstones || r.Value == nil
		}
	}
	switch {
	case len(kept) == 0:
		if keepEmpty || isLastOfProducer(&h, lastOfProducer) {
			return batch.EmptyBatch(h), 0, nil
		}
		return nil, 0, nil
	case len(kept) == len(recs) && (hasHorizon || !tombstones):
		return b, len(kept), nil
	}
	// A tombstone's batch gets its delete horizon the first time it is
	// cleaned (KIP-534): delete.retention.ms from now.
	dh := int64(-1)
	if hasHorizon {
		dh = horizon
	} else if tombstones {
		dh = nowMs + min(deleteRetentionMs, math.MaxInt64-nowMs)
	}
	out, err := batch.Rebuild(h, kept, dh, l.codecs)
	if err != nil {
		return nil, 0, fmt.Errorf("clean %s: rebuild batch at %d: %w", l.tp, h.BaseOffset, err)
	}
	return out, len(kept), nil
}

// filterMarker is filterBatch for a control batch (Kafka's
// checkBatchRetention for markers): a marker whose transaction has no
// batch left gets a delete horizon of delete.retention.ms at the first
// cleaning that finds it so, and goes at the first cleaning at or after
// that horizon. A producer's last batch, and the group's, stays emptied.
// keep is the aborted transaction whose .txnindex entry stays.
func (l *Log) filterMarker(s segSnap, pos int64, h batch.Header, b []byte, txns *cleanTxns, nowMs, deleteRetentionMs int64,
	lastOfProducer map[int64]producerLast, keepEmpty bool) (out []byte, keep *AbortedTxn, err error) {
	empty := h.RecordCount == 0
	var m *TxnMarker
	if !empty {
		if m, err = markerOf(b, &h, l.codecs); err != nil {
			return nil, nil, fmt.Errorf("clean %s: segment %d position %d: %w", l.tp, s.seg.baseOffset, pos, err)
		}
	}
	removable, keep := txns.onMarker(&h, m, empty)
	horizon, hasHorizon := h.DeleteHorizonMs()
	retainEmpty := keepEmpty || isLastOfProducer(&h, lastOfProducer)
	switch {
	case empty && retainEmpty:
		return b, nil, nil
	case empty:
		return nil, nil, nil
	case !removable || (hasHorizon && nowMs < horizon):
		return b, keep, nil
	case hasHorizon && retainEmpty:
		return batch.EmptyBatch(h), nil, nil
	case hasHorizon:
		return nil, nil, nil
	}
	recs, err := l.readRecords(s, pos, b)
	if err != nil {
		return nil, nil, err
	}
	out, err = batch.Rebuild(h, recs, nowMs+min(deleteRetentionMs, math.MaxInt64-nowMs), l.codecs)
	if err != nil {
		return nil, nil, fmt.Errorf("clean %s: rebuild marker at %d: %w", l.tp, h.BaseOffset, err)
	}
	return out, nil, nil
}

// shouldRetainRecord is Kafka's: a record past what the map covers stays;
// a keyed record stays if it is its key's latest and either has a value or
// is a tombstone whose batch's delete horizon has not passed (or has none
// yet); a record without a key goes.
func shouldRetainRecord(m *offsetMap, offset int64, r batch.Record, hasHorizon bool, horizon, nowMs int64) bool {
	if offset > m.latestOffset {
		return true
	}
	if r.Key == nil {
		return false
	}
	if offset < m.get(r.Key) {
		return false
	}
	return r.Value != nil || !hasHorizon || nowMs < horizon
}

func (l *Log) runHook(step string) error {
	if l.cleanHook == nil {
		return nil
	}
	return l.cleanHook(step)
}

// swapIn replaces group with dst in the segment list (steps 2-4 above). It
// reports whether dst was committed (renamed to .swap): from then on its
// files are the log's.
func (l *Log) swapIn(dst *segment, group []segSnap) (bool, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	i := -1
	for j, s := range l.segments {
		if s == group[0].seg {
			i = j
		}
	}
	if l.closed || i < 0 || i+len(group) >= len(l.segments) {
		return false, errCleanAborted
	}
	for j, g := range group {
		if s := l.segments[i+j]; s != g.seg || s.deleted || s.size != g.size {
			return false, errCleanAborted
		}
	}
	if err := dst.changeSuffix(swapSuffix); err != nil {
		return false, fmt.Errorf("clean %s: %w", l.tp, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return true, err
	}
	if err := l.runHook("swap"); err != nil {
		return true, err
	}
	segs := make([]*segment, 0, len(l.segments)-len(group)+1)
	segs = append(segs, l.segments[:i]...)
	segs = append(segs, dst)
	segs = append(segs, l.segments[i+len(group):]...)
	l.segments = segs
	due := l.now().Add(time.Duration(l.cfg.FileDeleteDelayMs) * time.Millisecond)
	var errs []error
	for j, g := range group {
		if err := g.seg.renameDeleted(); err != nil {
			errs = append(errs, err)
		}
		l.pending = append(l.pending, pendingDelete{seg: g.seg, due: due})
		l.hasPending.Store(true)
		if err := l.runHook(fmt.Sprintf("deleted-%d", j)); err != nil {
			return true, err
		}
	}
	if err := dst.changeSuffix(""); err != nil {
		errs = append(errs, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return true, fmt.Errorf("clean %s: swap: %w", l.tp, err)
	}
	return true, l.runHook("done")
}
