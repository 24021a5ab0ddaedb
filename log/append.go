package log

import (
	"errors"
	"fmt"
	"math"

	"github.com/brook-mq/brook/protocol/batch"
)

// AppendInfo describes the outcome of an append.
type AppendInfo struct {
	FirstOffset, LastOffset int64
	// LogAppendTime is the broker timestamp stamped into the batch, or -1
	// for CreateTime topics; for a duplicate, the original batch's max
	// timestamp, as Kafka reports it.
	LogAppendTime  int64
	LogStartOffset int64
	// Duplicate: the batch repeats one of the producer's last five; nothing
	// was appended and the offsets are the original ones.
	Duplicate   bool
	RecordCount int32
}

// Append validates one producer batch (exactly one magic v2 batch, as
// Produce v3+ carries), checks it against the producer's idempotence state,
// assigns offsets by rewriting baseOffset in place, stamps leaderEpoch (and
// the broker time for LogAppendTime topics) and appends it. b is modified.
func (l *Log) Append(b []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.appendAsLeader(b, leaderEpoch, false)
}

// AppendAsCoordinator is Append for a batch a coordinator writes on a
// producer's behalf (TxnOffsetCommit's transactional offsets in
// __consumer_offsets), Kafka's AppendOrigin.COORDINATOR: the producer epoch
// is checked but not the sequence, since the coordinator writes every such
// batch with sequence 0; a client sequence check would drop the second one
// of an epoch as a duplicate.
func (l *Log) AppendAsCoordinator(b []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.appendAsLeader(b, leaderEpoch, true)
}

func (l *Log) appendAsLeader(b []byte, leaderEpoch int32, coordinator bool) (AppendInfo, error) {
	// Validation (the CRC and a walk over every record, decompressing)
	// is most of an append's CPU and needs only the batch and the config,
	// so it runs before appendMu: producers to one partition validate in
	// parallel and hold the lock only for the producer state and the
	// write. A config change in between makes it run again under the
	// lock, so that every batch meets the config it is appended under.
	cfg, gen := l.configGen()
	v, verr := l.validate(b, cfg)
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return AppendInfo{}, ErrClosed
	}
	if now, nowGen := l.configGen(); nowGen != gen {
		cfg = now
		v, verr = l.validate(b, cfg)
	}
	if verr != nil {
		return AppendInfo{}, verr
	}
	b, h := v.b, v.h
	if h.HasProducerID() && !h.Control() {
		// Called directly, not through a func value, which would move h
		// to the heap: an allocation per append.
		var dup *producerBatch
		var err error
		if coordinator {
			dup, err = l.producers.checkCoordinator(&h)
		} else {
			dup, err = l.producers.checkClient(&h)
		}
		if err != nil {
			return AppendInfo{}, err
		}
		if dup != nil {
			return AppendInfo{
				FirstOffset: dup.FirstOffset, LastOffset: dup.LastOffset, LogAppendTime: dup.Timestamp,
				LogStartOffset: l.LogStartOffset(), Duplicate: true, RecordCount: h.RecordCount,
			}, nil
		}
	}
	h.BaseOffset = l.logEndOffset
	h.PartitionLeaderEpoch = leaderEpoch
	batch.SetBaseOffset(b, h.BaseOffset)
	batch.SetPartitionLeaderEpoch(b, leaderEpoch)
	// As Kafka's LogValidator: the stored maxTimestamp is the broker's time
	// for LogAppendTime topics, else the largest record timestamp.
	appendTime := int64(-1)
	h.MaxTimestamp = v.maxTimestamp
	h.Attributes &^= batch.TimestampTypeBit
	if cfg.LogAppendTime {
		// Read under the lock, so that stamped times follow the log order.
		nowMs := l.now().UnixMilli()
		appendTime = nowMs
		h.MaxTimestamp = nowMs
		h.Attributes |= batch.TimestampTypeBit
	}
	batch.SetMaxTimestamp(b, cfg.LogAppendTime, h.MaxTimestamp)
	logStart, err := l.appendBatchLocked(b, &h)
	if err != nil {
		return AppendInfo{}, err
	}
	return AppendInfo{
		FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(), LogAppendTime: appendTime,
		LogStartOffset: logStart, RecordCount: h.RecordCount,
	}, nil
}

// validated is a batch that passed validate: the batch to append (a
// renumbered copy when Kafka would rebuild it), its header and its largest
// record timestamp.
type validated struct {
	b            []byte
	h            batch.Header
	maxTimestamp int64
}

// validate applies the checks of a leader append that depend only on the
// batch and cfg, in Kafka's order; the caller need not hold appendMu.
func (l *Log) validate(b []byte, cfg Config) (validated, error) {
	if int64(len(b)) > int64(cfg.MaxMessageBytes) {
		return validated{}, fmt.Errorf("%w: batch of %d bytes, max.message.bytes is %d", ErrMessageTooLarge, len(b), cfg.MaxMessageBytes)
	}
	if int64(len(b)) > cfg.SegmentBytes {
		return validated{}, fmt.Errorf("%w: batch of %d bytes, segment.bytes is %d", ErrRecordListTooLarge, len(b), cfg.SegmentBytes)
	}
	checkTimestamps := !cfg.LogAppendTime && (cfg.TimestampBeforeMaxMs < math.MaxInt64 || cfg.TimestampAfterMaxMs < math.MaxInt64)
	nowMs := int64(0)
	if checkTimestamps {
		nowMs = l.now().UnixMilli()
	}
	res, err := batch.Check(b, batch.ValidateOptions{
		MaxMessageBytes: cfg.MaxMessageBytes, KeyRequired: cfg.Compact, LogAppendTime: cfg.LogAppendTime,
		CheckTimestamps: checkTimestamps,
		NowMs:           nowMs, TimestampBeforeMaxMs: cfg.TimestampBeforeMaxMs, TimestampAfterMaxMs: cfg.TimestampAfterMaxMs,
		Codecs: l.codecs,
	})
	if err != nil {
		return validated{}, classifyBatchError(err)
	}
	h := res.Header
	if !res.OffsetsInOrder && h.Compression() != batch.None {
		// Kafka's LogValidator rebuilds such a batch with fresh offset deltas.
		if b, err = batch.Renumber(b, h.Compression(), l.codecs); err != nil {
			return validated{}, classifyBatchError(err)
		}
		if h, err = batch.ParseHeader(b); err != nil {
			return validated{}, classifyBatchError(err)
		}
	}
	return validated{b: b, h: h, maxTimestamp: res.MaxTimestamp}, nil
}

// classifyBatchError maps a validation failure to the log's sentinels,
// keeping the batch error in the chain: batch.KafkaCode still finds the
// precise code (INVALID_TIMESTAMP, UNSUPPORTED_COMPRESSION_TYPE, record
// errors for Produce v8+) through errors.Is and errors.As.
func classifyBatchError(err error) error {
	switch {
	case errors.Is(err, batch.ErrMessageTooLarge):
		return fmt.Errorf("%w: %w", ErrMessageTooLarge, err)
	case errors.Is(err, batch.ErrInvalidRecord), errors.Is(err, batch.ErrInvalidTimestamp),
		errors.Is(err, batch.ErrUnsupportedCompression), errors.Is(err, batch.ErrUnsupportedMagic):
		return fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	case errors.Is(err, batch.ErrCorrupt), errors.Is(err, batch.ErrTruncated):
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	default:
		return fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	}
}

// appendBatchLocked writes one batch whose header fields are final and
// applies it to the producer state and transactions (an aborting marker
// also gets its .txnindex entry). The caller holds appendMu. The bytes are written past the committed end
// without mu, so readers are not held up by the write; the new end is
// then published under mu.
func (l *Log) appendBatchLocked(b []byte, h *batch.Header) (_ int64, err error) {
	defer func() { l.ioFailed(err) }()
	if err = l.rewriteStaleEpochs(); err != nil {
		return 0, err
	}
	cfg := l.cfg
	marker, err := markerOf(b, h, l.codecs)
	if err != nil {
		return 0, err
	}
	s, err := l.segmentFor(h, len(b), cfg, l.now().UnixMilli())
	if err != nil {
		return 0, err
	}
	pos := s.size
	aborted, isAbort := abortEntry(l.producers, l.unstable, h, marker)
	if err := l.writeSegment(s, b, pos); err != nil {
		return 0, err
	}
	if isAbort {
		// The entry is on file before the marker is visible, so that no
		// reader sees the marker without it.
		if err := s.txnIndex.write(aborted); err != nil {
			if terr := s.log.Truncate(pos); terr != nil {
				err = errors.Join(err, terr)
			}
			return 0, fmt.Errorf("append to segment %d of %s: %w", s.baseOffset, l.tp, err)
		}
	}
	l.mu.Lock()
	epochChanged, err := l.publishBatchLocked(s, h, pos, marker)
	if isAbort {
		s.txnIndex.entries = append(s.txnIndex.entries, aborted)
	}
	return l.finishAppend(s, epochChanged, err)
}

// segmentFor is the active segment for a batch h of size bytes, rolled
// first when the batch would not fit it (shouldRoll). The caller holds
// appendMu.
func (l *Log) segmentFor(h *batch.Header, size int, cfg Config, nowMs int64) (*segment, error) {
	s := l.active()
	if !shouldRoll(rollInputFor(s, h, size, cfg, nowMs)) {
		return s, nil
	}
	if err := l.rollLocked(); err != nil {
		return nil, err
	}
	return l.active(), nil
}

// writeSegment writes b at pos of s, past its committed end; on failure it
// cuts whatever part was written so the file ends at a batch boundary.
func (l *Log) writeSegment(s *segment, b []byte, pos int64) error {
	if _, err := s.log.WriteAt(b, pos); err != nil {
		if terr := s.log.Truncate(pos); terr != nil {
			err = errors.Join(err, terr)
		}
		return fmt.Errorf("append to segment %d of %s: %w", s.baseOffset, l.tp, err)
	}
	return nil
}

// rewriteStaleEpochs rewrites the epoch checkpoint when it names epochs the
// load dropped: once records pass their start offsets, a load after a
// crash would keep them. The caller holds appendMu.
func (l *Log) rewriteStaleEpochs() error {
	if !l.epochsStale {
		return nil
	}
	l.mu.RLock()
	epochs := l.epochs.snapshot()
	l.mu.RUnlock()
	return l.writeEpochCheckpoint(epochs)
}

// publishBatchLocked makes a batch written at pos of s part of the log: its
// index entries, the log end offset, the producer state, open
// transactions and the epoch cache. The caller holds appendMu and mu; the
// log end offset moves even when indexing fails, as the bytes are there.
// It reports whether the epoch cache changed.
func (l *Log) publishBatchLocked(s *segment, h *batch.Header, pos int64, marker *TxnMarker) (bool, error) {
	err := s.indexBatch(h, pos, l.cfg.IndexIntervalBytes)
	l.logEndOffset = h.LastOffset() + 1
	began, done := l.producers.update(h, marker)
	l.unstable = l.unstable.apply(h, began, done, l.highWatermark)
	epochChanged := h.PartitionLeaderEpoch >= 0 && l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
	return epochChanged, err
}

// finishAppend ends an append whose batches publishBatchLocked published
// (indexErr its first failure): it releases mu, which the caller holds,
// writes the epoch checkpoint if the epochs changed and flushes past
// flush.messages. It returns the log start offset.
func (l *Log) finishAppend(s *segment, epochChanged bool, indexErr error) (int64, error) {
	var epochs []epochEntry
	if epochChanged {
		epochs = l.epochs.snapshot()
	}
	unflushed := l.logEndOffset - l.recoveryPoint
	logStart := l.logStartOffset
	l.mu.Unlock()
	if indexErr != nil {
		return 0, fmt.Errorf("index segment %d of %s: %w", s.baseOffset, l.tp, indexErr)
	}
	if epochs != nil {
		if err := l.writeEpochCheckpoint(epochs); err != nil {
			return 0, err
		}
	}
	if unflushed >= l.cfg.FlushMessages {
		if err := l.flushUpTo(-1); err != nil {
			return 0, err
		}
	}
	return logStart, nil
}

// rollInput is everything shouldRoll looks at, so that the decision is a
// pure function that tests can drive directly.
type rollInput struct {
	SegmentSize, SegmentBytes, BatchSize int64
	NowMs, CreatedMs                     int64
	RollTimestamp, BatchMaxTimestamp     int64 // RollTimestamp < 0: segment empty
	SegmentMs, RollJitterMs              int64
	IndexFull, TimeIndexFull             bool
	BaseOffset, LastOffset               int64
}

func rollInputFor(s *segment, h *batch.Header, size int, cfg Config, nowMs int64) rollInput {
	return rollInput{
		SegmentSize: s.size, SegmentBytes: cfg.SegmentBytes, BatchSize: int64(size),
		NowMs: nowMs, CreatedMs: s.created.UnixMilli(),
		RollTimestamp: s.rollTimestamp, BatchMaxTimestamp: h.MaxTimestamp, SegmentMs: cfg.SegmentMs,
		RollJitterMs: s.rollJitterMs,
		IndexFull:    s.index.isFull(), TimeIndexFull: s.timeIndex.isFull(),
		BaseOffset: s.baseOffset, LastOffset: h.LastOffset(),
	}
}

// shouldRoll is Kafka's LogSegment.shouldRoll: the batch would push the
// segment past segment.bytes; or the segment is non-empty and older than
// segment.ms less the segment's jitter, age measured from its first batch's timestamp to this
// batch's when the segment has one, else by wall clock since creation; or
// an index is full; or the batch's offsets no longer fit the 4-byte
// relative offsets of the indexes.
func shouldRoll(in rollInput) bool {
	if in.SegmentSize > in.SegmentBytes-in.BatchSize {
		return true
	}
	waited := in.NowMs - in.CreatedMs
	if in.RollTimestamp >= 0 {
		waited = in.BatchMaxTimestamp - in.RollTimestamp
	}
	if in.SegmentSize > 0 && waited > in.SegmentMs-in.RollJitterMs {
		return true
	}
	return in.IndexFull || in.TimeIndexFull || in.LastOffset-in.BaseOffset > math.MaxInt32
}

// rollLocked starts a new active segment at the log end offset. The old
// segment's indexes are finalised; it, its indexes and a producer state
// snapshot are fsynced in the background, after which the recovery point
// moves to the new base offset. The caller holds appendMu.
func (l *Log) rollLocked() error {
	old := l.active()
	newBase := l.logEndOffset
	if old.size == 0 && old.baseOffset == newBase {
		return nil
	}
	if err := l.writeSnapshot(newBase); err != nil {
		return err
	}
	s, err := createSegment(l.fs, l.files, l.dir, newBase, l.cfg, l.now())
	if err != nil {
		return err
	}
	s.rollJitterMs = l.segmentJitter()
	l.mu.Lock()
	err = old.onBecomeInactive()
	l.segments = append(l.segments, s)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	l.logger.Debug("rolled segment", "base_offset", newBase)
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		if err := l.flushUpTo(newBase); err != nil {
			l.logger.Error("flush after roll", "err", err)
		}
	}()
	return nil
}

// Flush fsyncs everything up to the log end offset and moves the recovery
// point there.
func (l *Log) Flush() error { return l.flushUpTo(-1) }

// flushUpTo fsyncs the segments holding offsets in [recovery point, upTo)
// and then advances the recovery point to upTo (-1: the log end offset).
func (l *Log) flushUpTo(upTo int64) (err error) {
	defer func() { l.ioFailed(err) }()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.RLock()
	if upTo < 0 {
		upTo = l.logEndOffset
	}
	rp := l.recoveryPoint
	var segs []*segment
	for i, s := range l.segments {
		last := i == len(l.segments)-1
		if s.baseOffset < upTo && (last || l.segments[i+1].baseOffset > rp) {
			segs = append(segs, s)
		}
	}
	l.mu.RUnlock()
	if upTo <= rp {
		return nil
	}
	l.mu.Lock()
	for _, s := range segs {
		if s.deleted {
			continue
		}
		if err := s.writeIndexes(); err != nil {
			l.mu.Unlock()
			return err
		}
	}
	l.mu.Unlock()
	for _, s := range segs {
		if err := s.sync(); err != nil {
			return err
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	l.mu.Lock()
	if upTo > l.recoveryPoint {
		l.recoveryPoint = min(upTo, l.logEndOffset)
	}
	l.lastFlush = l.now()
	l.mu.Unlock()
	return nil
}

// flushIfDue implements flush.ms; the Manager calls it periodically.
func (l *Log) flushIfDue() error {
	l.mu.RLock()
	due := l.logEndOffset > l.recoveryPoint && l.now().Sub(l.lastFlush).Milliseconds() >= l.cfg.FlushMs
	l.mu.RUnlock()
	if !due {
		return nil
	}
	return l.flushUpTo(-1)
}

// markerOf decodes the end-transaction marker of a control batch; nil for
// data batches, for control batches of other types and for empty ones (a
// marker the cleaner emptied: Kafka's producer state skips them).
func markerOf(b []byte, h *batch.Header, codecs *batch.Codecs) (*TxnMarker, error) {
	if !h.Control() || h.RecordCount == 0 {
		return nil, nil
	}
	m, ok, err := decodeMarkerBatch(b, codecs)
	if err != nil || !ok {
		return nil, err
	}
	return &m, nil
}
