package log

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brook-mq/brook/protocol/batch"
)

// Options carry what a Log cannot know from its own directory: the
// per-log-dir checkpoints, the clock and the logger. The Manager fills them.
type Options struct {
	Now    func() time.Time
	Logger *slog.Logger
	// TopicID is written to partition.metadata for a new partition and must
	// match an existing one; zero skips the check.
	TopicID        [16]byte
	RecoveryPoint  int64
	LogStartOffset int64
	HighWatermark  int64
	// CleanShutdown skips the scan of segments past the recovery point.
	CleanShutdown bool
	// Codecs decompress batches for validation and timestamp search; nil
	// uses a private set (correct, slower).
	Codecs *batch.Codecs
	// Int64N draws segment.jitter.ms jitter in [0, n); nil uses
	// math/rand/v2.
	Int64N func(n int64) int64
	// CleanerCheckpoint is the log's entry in cleaner-offset-checkpoint
	// (0: none).
	CleanerCheckpoint int64
	// OnIOError is told of I/O errors writing the log, from a goroutine
	// of its own (the Manager takes the log dir offline, log_dirs.go).
	OnIOError func(error)
	// FS is the file system the log is on (nil: the operating system's).
	FS FS
	// Files bounds the descriptors of the segment files; the logs of a
	// Manager share one (nil: a cache of the log's own, of
	// DefaultMaxOpenFiles).
	Files *FileCache
}

// Log is one partition's log.
//
// Locking: appendMu serializes everything that writes (append, roll,
// truncation, segment deletion) and guards the producer state; mu guards
// the published state below and is held only briefly, so readers wait for
// an appender only while it publishes, never while it writes. flushMu
// serializes fsyncs. Order: appendMu, flushMu, mu.
type Log struct {
	dir    string
	fs     FS
	files  *FileCache
	tp     TopicPartition
	now    func() time.Time
	logger *slog.Logger
	codecs *batch.Codecs
	int64N func(n int64) int64
	// onIOError is Options.OnIOError (nil: none).
	onIOError func(error)

	appendMu sync.Mutex
	// followerHdrs is AppendAsFollower's scratch for the headers of one
	// fetch answer, kept between calls under appendMu (followerHdrsMax).
	followerHdrs []batch.Header
	producers    *producerState
	// lastSnapshot is a producer snapshot known to be on disk, durable:
	// the one the load read or the last one written (writeSnapshot).
	// Guarded by appendMu.
	lastSnapshot snapshotMark
	// epochsStale: the leader-epoch checkpoint differs from the cache
	// only in entries starting at or past the log end (dropped by the
	// load, recovery.go, or assigned there, AssignEpochStartOffset); it
	// is rewritten before the next append moves the log end past them.
	// Guarded by appendMu.
	epochsStale bool

	flushMu sync.Mutex
	bg      sync.WaitGroup

	mu             sync.RWMutex
	cfg            Config
	cfgGen         uint64 // counts SetConfig calls: a validation's cfg is stale if it moved
	topicID        [16]byte
	segments       []*segment // ascending base offset; the last is active
	logEndOffset   int64
	logStartOffset int64
	highWatermark  int64
	recoveryPoint  int64 // offsets below are fsynced
	epochs         epochCache
	// unstable holds the transactions that bound the last stable offset;
	// appenders change it under both locks.
	unstable  unstableTxns
	unflushed int64
	lastFlush time.Time
	pending   []pendingDelete
	// hasPending is set when pending gains a segment and cleared when
	// deleteExpiredSegments empties it, so that the Manager's check every
	// second passes over a log with nothing to delete without its lock.
	hasPending atomic.Bool
	closed     bool
	// cleanerCheckpoint is the cleaner's first dirty offset
	// (cleaner-offset-checkpoint), 0 when the log was never cleaned.
	cleanerCheckpoint int64
	// cleanHook, set only by tests, is called at each step of a cleaning's
	// swap; an error stops the cleaning there, as a crash would.
	cleanHook func(step string) error
}

// pendingDelete is a segment renamed to .deleted whose files are closed and
// removed once file.delete.delay.ms has passed, so readers holding a Slice
// of it can finish.
type pendingDelete struct {
	seg *segment
	due time.Time
}

// Open loads (and, after an unclean stop, recovers) the log in dir, whose
// name is <topic>-<partition>; it creates the directory if needed.
func Open(dir string, cfg Config, opts Options) (*Log, error) {
	name := filepath.Base(dir)
	if isFutureDir(name) {
		// <topic>-<partition>.<uuid>-future (future.go)
		if i := strings.LastIndexByte(strings.TrimSuffix(name, futureSuffix), '.'); i > 0 {
			name = name[:i]
		}
	}
	tp, ok := parseDirName(name)
	if !ok {
		return nil, fmt.Errorf("open log %s: directory name is not <topic>-<partition>", dir)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Codecs == nil {
		c, err := batch.NewCodecs(batch.CodecsConfig{})
		if err != nil {
			return nil, fmt.Errorf("open log %s: %w", dir, err)
		}
		opts.Codecs = c
	}
	l := &Log{
		dir: dir, tp: tp, now: opts.Now,
		fs:        fsOrOS(opts.FS),
		files:     opts.Files,
		logger:    opts.Logger.With("partition", tp.String()),
		cfg:       cfg.sanitized(),
		codecs:    opts.Codecs,
		int64N:    opts.Int64N,
		onIOError: opts.OnIOError,
		producers: newProducerState(),
		lastFlush: opts.Now(),

		cleanerCheckpoint: opts.CleanerCheckpoint,
	}
	if l.files == nil {
		l.files = NewFileCache(DefaultMaxOpenFiles())
	}
	if err := l.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	if err := l.loadTopicID(opts.TopicID); err != nil {
		return nil, err
	}
	if err := l.load(opts); err != nil {
		l.closeSegments()
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	return l, nil
}

func (l *Log) loadTopicID(want [16]byte) error {
	name := filepath.Join(l.dir, partitionMetadataFile)
	data, err := l.fs.ReadFile(name)
	switch {
	case os.IsNotExist(err):
		if want == ([16]byte{}) {
			return nil
		}
		l.topicID = want
		return writeFileAtomic(l.fs, name, encodePartitionMetadata(want))
	case err != nil:
		return fmt.Errorf("read %s: %w", name, err)
	}
	id, err := decodePartitionMetadata(data)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if want != ([16]byte{}) && id != want {
		return fmt.Errorf("%w: %s holds %s, expected %s", ErrInconsistentTopicID, l.dir, FormatTopicID(id), FormatTopicID(want))
	}
	l.topicID = id
	return nil
}

// TopicPartition returns the partition this log holds.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Dir returns the partition directory.
func (l *Log) Dir() string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.dir
}

// TopicID returns the topic ID from partition.metadata (zero if none).
func (l *Log) TopicID() [16]byte {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.topicID
}

// SetTopicID records the topic ID when the partition had none.
func (l *Log) SetTopicID(id [16]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.topicID == id {
		return nil
	}
	if l.topicID != ([16]byte{}) {
		return fmt.Errorf("%w: %s holds %s", ErrInconsistentTopicID, l.dir, FormatTopicID(l.topicID))
	}
	if err := writeFileAtomic(l.fs, filepath.Join(l.dir, partitionMetadataFile), encodePartitionMetadata(id)); err != nil {
		return err
	}
	l.topicID = id
	return nil
}

// LogStartOffset is the first offset a consumer may fetch.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logStartOffset
}

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.logEndOffset
}

// HighWatermark is the last value given to SetHighWatermark, clamped.
func (l *Log) HighWatermark() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.highWatermark
}

// SetHighWatermark stores the high watermark, clamped to [logStart, LEO].
func (l *Log) SetHighWatermark(o int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.highWatermark = min(max(o, l.logStartOffset), l.logEndOffset)
}

// RecoveryPoint is the offset below which the log is known to be on disk.
func (l *Log) RecoveryPoint() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.recoveryPoint
}

// Config returns the log's configuration.
func (l *Log) Config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg
}

// SetConfig applies a new topic configuration; it affects the next append,
// roll and retention check.
func (l *Log) SetConfig(c Config) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg = c.sanitized()
	l.cfgGen++
}

// configGen is the config and its generation, for validating without
// appendMu.
func (l *Log) configGen() (Config, uint64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cfg, l.cfgGen
}

// Size is the total size of the segment files in bytes.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segments {
		n += s.size
	}
	return n
}

// NumSegments returns how many segments the log has.
func (l *Log) NumSegments() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.segments)
}

// LeaderEpochAt returns the leader epoch under which offset was written (-1 if unknown).
func (l *Log) LeaderEpochAt(offset int64) int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.epochFor(offset)
}

// LatestEpoch returns the latest leader epoch in the log, -1 if none.
func (l *Log) LatestEpoch() int32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if e, ok := l.epochs.latest(); ok {
		return e.Epoch
	}
	return -1
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest epoch <= the
// requested one and the offset where the next epoch starts (the log end
// offset for the latest epoch); -1, -1 when the epoch is unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (endEpoch int32, endOffset int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.epochs.endOffsetFor(epoch, l.logEndOffset)
}

// AssignEpochStartOffset records that leader epoch epoch starts at offset,
// as a new leader does (Kafka's maybeAssignEpochStartOffset) before it
// writes anything in its term: OffsetForLeaderEpoch for that epoch then
// answers (epoch, LEO) rather than UNDEFINED, and a follower holding a
// later epoch than the leader's last written one learns where it diverges.
// The checkpoint is written when the cache changes.
func (l *Log) AssignEpochStartOffset(epoch int32, offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return ErrClosed
	}
	l.mu.Lock()
	// An epoch starting at the log end, that drops no entry below it,
	// need not reach the file before a record of it does: a load drops
	// an epoch that starts at the log end anyway (truncateFromEnd), so
	// the file is rewritten before the next append instead, as after a
	// load (epochsStale). A new controller's LeaderAndIsr gives every
	// partition of a failed broker a new epoch; at tens of thousands of
	// idle partitions two fsyncs each held up the failover.
	deferrable := offset == l.logEndOffset && l.epochs.onlyOlderBefore(epoch, offset)
	changed := l.epochs.assign(epoch, offset)
	epochs := l.epochs.snapshot()
	l.mu.Unlock()
	if !changed {
		return nil
	}
	if deferrable {
		l.epochsStale = true
		return nil
	}
	if err := l.writeEpochCheckpoint(epochs); err != nil {
		return fmt.Errorf("record leader epoch %d start %d of %s: %w", epoch, offset, l.tp, err)
	}
	return nil
}

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// writeEpochCheckpoint persists the epoch cache; the caller holds appendMu
// so that writes of the file do not interleave.
func (l *Log) writeEpochCheckpoint(entries []epochEntry) error {
	if err := writeFileAtomic(l.fs, filepath.Join(l.dir, leaderEpochCheckpointFile), encodeEpochCheckpoint(entries)); err != nil {
		return err
	}
	l.epochsStale = false // every caller writes the whole cache
	return nil
}

// Close flushes the log, snapshots producer state at the log end offset,
// trims the active segment's indexes and closes all files. Segments
// awaiting deletion are removed now.
func (l *Log) Close() error {
	if !l.markClosed() {
		return nil
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	var errs []error
	// Trim the indexes first so that the fsync below covers them too: a
	// clean-shutdown marker promises indexes that need no rebuild.
	l.mu.Lock()
	if err := l.active().onBecomeInactive(); err != nil {
		errs = append(errs, err)
	}
	l.mu.Unlock()
	if err := l.flushUpTo(-1); err != nil {
		errs = append(errs, err)
	}
	if err := l.active().sync(); err != nil {
		errs = append(errs, err)
	}
	l.mu.Lock()
	empty := l.logEndOffset == l.segments[0].baseOffset && len(l.producers.producers) == 0
	l.mu.Unlock()
	// An empty log without producers needs no snapshot: the load replays
	// nothing from its base. Kafka takes none either (its map end offset
	// is not past its last snapshot's).
	if !empty {
		if err := l.writeSnapshot(l.logEndOffset); err != nil {
			errs = append(errs, err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.pending {
		if err := p.seg.removeFiles(); err != nil {
			errs = append(errs, err)
		}
	}
	l.pending = nil
	errs = append(errs, l.closeSegmentsLocked())
	return errors.Join(errs...)
}

// markClosed stops new operations and waits for background flushes; it
// reports false if the log was already closed.
func (l *Log) markClosed() bool {
	l.appendMu.Lock()
	l.mu.Lock()
	was := l.closed
	l.closed = true
	l.mu.Unlock()
	l.appendMu.Unlock()
	l.bg.Wait()
	return !was
}

// closeForDelete stops the log without touching its files, which stay open
// for readers until the Manager removes the directory.
func (l *Log) closeForDelete() { l.markClosed() }

// renameDir renames the log's directory from from to to (to delete it, or
// at the end of a move) and moves the names of its open-on-demand files along, so that
// readers of Slices handed out before still reach them. l.dir keeps the
// old name: the caller tracks the new one.
func (l *Log) renameDir(from, to string) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var files []*cachedFile
	add := func(s *segment) {
		if cf := asCached(s.log); cf != nil {
			files = append(files, cf)
		}
	}
	for _, s := range l.segments {
		add(s)
	}
	for _, p := range l.pending {
		add(p.seg)
	}
	return l.files.renameDir(l.fs, from, to, files)
}

// release closes all files without flushing (the log is being deleted).
func (l *Log) release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.pending {
		_ = p.seg.closeFiles()
	}
	l.pending = nil
	return l.closeSegmentsLocked()
}

func (l *Log) closeSegments() {
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.closeSegmentsLocked()
}

func (l *Log) closeSegmentsLocked() error {
	var errs []error
	for _, s := range l.segments {
		if err := s.closeFiles(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteExpiredSegments removes segments whose file.delete.delay.ms has
// passed; the Manager calls it periodically.
func (l *Log) deleteExpiredSegments() error {
	if !l.hasPending.Load() {
		return nil
	}
	now := l.now()
	l.mu.Lock()
	var due []pendingDelete
	kept := l.pending[:0]
	for _, p := range l.pending {
		if !now.Before(p.due) {
			due = append(due, p)
		} else {
			kept = append(kept, p)
		}
	}
	l.pending = kept
	if len(kept) == 0 {
		l.hasPending.Store(false)
	}
	l.mu.Unlock()
	var errs []error
	for _, p := range due {
		if err := p.seg.removeFiles(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// scheduleDelete renames segs to .deleted and queues their removal. The
// caller holds appendMu and mu and has already unlinked segs from the list.
func (l *Log) scheduleDeleteLocked(segs []*segment) error {
	var errs []error
	due := l.now().Add(time.Duration(l.cfg.FileDeleteDelayMs) * time.Millisecond)
	for _, s := range segs {
		if err := s.renameDeleted(); err != nil {
			errs = append(errs, err)
		}
		l.pending = append(l.pending, pendingDelete{seg: s, due: due})
		l.hasPending.Store(true)
	}
	return errors.Join(errs...)
}
