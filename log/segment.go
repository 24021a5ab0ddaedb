package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/brook-mq/brook/protocol/batch"
)

// File name suffixes of a segment and of files awaiting removal.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	snapshotSuffix  = ".snapshot"
	deletedSuffix   = ".deleted"
	// The cleaner writes a segment's replacement as .cleaned files and
	// renames them .swap when it commits, as Kafka does (see clean.go).
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// offsetFileName is Kafka's 20-digit zero-padded offset file name.
func offsetFileName(dir string, offset int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", offset, suffix))
}

// parseOffsetFileName returns the offset of a name like 00000000000000000042.log.
func parseOffsetFileName(name, suffix string) (int64, bool) {
	s, ok := strings.CutSuffix(name, suffix)
	if !ok || len(s) != 20 {
		return 0, false
	}
	o, err := strconv.ParseInt(s, 10, 64)
	return o, err == nil && o >= 0
}

// segment is one .log file with its offset and time indexes and, once a
// transaction was aborted in it, its transaction index. Its mutable fields are
// guarded by the owning Log's mu; file contents past size are not yet
// published and readers never look at them.
type segment struct {
	fs         FS
	dir        string
	baseOffset int64
	log        File
	index      *offsetIndex
	timeIndex  *timeIndex
	txnIndex   *txnIndex
	// txnIndexDamaged: the .txnindex file was cut to its valid entries on
	// open; recovery must replay the segment to rebuild the rest.
	txnIndexDamaged bool

	size               int64 // committed bytes: readers stop here
	nextOffset         int64 // offset after the last batch; baseOffset when empty
	maxTimestamp       int64 // -1 when unknown
	maxTimestampOffset int64 // last offset of the batch holding maxTimestamp
	rollTimestamp      int64 // first batch's max timestamp, -1 when empty: drives segment.ms
	rollJitterMs       int64 // drawn from segment.jitter.ms when the segment is opened
	created            time.Time
	bytesSinceIndex    int64
	deleted            bool   // renamed to .deleted; files stay open for readers
	suffix             string // "" or, while the cleaner builds it, .cleaned / .swap
}

func (s *segment) paths() []string {
	return []string{
		offsetFileName(s.dir, s.baseOffset, logSuffix+s.suffix),
		offsetFileName(s.dir, s.baseOffset, indexSuffix+s.suffix),
		offsetFileName(s.dir, s.baseOffset, timeIndexSuffix+s.suffix),
		offsetFileName(s.dir, s.baseOffset, txnIndexSuffix+s.suffix),
	}
}

// openSegmentFiles opens (creating if needed) the three files of a segment.
func openSegmentFiles(fs FS, files *FileCache, dir string, baseOffset int64, cfg Config, now time.Time) (*segment, error) {
	return openSegmentFilesSuffix(fs, files, dir, baseOffset, "", cfg, now)
}

// openSegmentFilesSuffix opens the files of a segment whose names end in
// suffix after the usual extension (the cleaner's .cleaned files).
// The .log's descriptor is one of files' (filecache.go): it may be closed
// while the segment is idle and is reopened on its next use.
func openSegmentFilesSuffix(fs FS, files *FileCache, dir string, baseOffset int64, suffix string, cfg Config, now time.Time) (*segment, error) {
	s := &segment{fs: fs, dir: dir, baseOffset: baseOffset, nextOffset: baseOffset, maxTimestamp: -1, maxTimestampOffset: -1, rollTimestamp: -1, created: now, suffix: suffix}
	p := s.paths()
	f, err := files.openCached(fs, p[0], os.O_CREATE|os.O_RDWR)
	if err != nil {
		return nil, fmt.Errorf("open segment %s: %w", p[0], err)
	}
	s.log = f
	s.index = openOffsetIndex(fs, p[1], baseOffset, cfg.SegmentIndexBytes)
	s.timeIndex = openTimeIndex(fs, p[2], baseOffset, cfg.SegmentIndexBytes)
	if s.txnIndex, s.txnIndexDamaged, err = openTxnIndex(fs, p[3]); err != nil {
		f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		s.closeFiles()
		return nil, fmt.Errorf("stat segment %s: %w", p[0], err)
	}
	s.size = st.Size()
	if s.size == 0 {
		s.created = now
	} else {
		s.created = st.ModTime()
	}
	return s, nil
}

// createSegment makes a fresh, empty active segment, replacing leftovers.
func createSegment(fs FS, files *FileCache, dir string, baseOffset int64, cfg Config, now time.Time) (*segment, error) {
	s := &segment{dir: dir, baseOffset: baseOffset}
	for _, p := range s.paths() {
		if err := fs.Remove(p); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("create segment %d: %w", baseOffset, err)
		}
	}
	s, err := openSegmentFiles(fs, files, dir, baseOffset, cfg, now)
	if err != nil {
		return nil, err
	}
	if err := s.preallocate(); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

func (s *segment) preallocate() error {
	if err := s.index.preallocate(); err != nil {
		return fmt.Errorf("preallocate index of segment %d: %w", s.baseOffset, err)
	}
	if err := s.timeIndex.preallocate(); err != nil {
		return fmt.Errorf("preallocate time index of segment %d: %w", s.baseOffset, err)
	}
	return nil
}

// onBecomeInactive writes the final time index entry and trims both indexes,
// as Kafka does when a segment rolls.
func (s *segment) onBecomeInactive() error {
	if s.maxTimestamp >= 0 {
		if err := s.timeIndex.maybeAppend(s.maxTimestamp, s.maxTimestampOffset, true); err != nil {
			return err
		}
	}
	if err := s.index.trim(); err != nil {
		return fmt.Errorf("trim index of segment %d: %w", s.baseOffset, err)
	}
	if err := s.timeIndex.trim(); err != nil {
		return fmt.Errorf("trim time index of segment %d: %w", s.baseOffset, err)
	}
	return nil
}

// indexBatch records a batch written at position in the in-memory state and
// the indexes. The caller holds the Log's mu.
func (s *segment) indexBatch(h *batch.Header, position int64, indexInterval int32) error {
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp = h.MaxTimestamp
		s.maxTimestampOffset = h.LastOffset()
	}
	if s.rollTimestamp < 0 {
		s.rollTimestamp = h.MaxTimestamp
	}
	if s.bytesSinceIndex > int64(indexInterval) {
		if err := s.index.append(h.LastOffset(), position); err != nil {
			return err
		}
		if err := s.timeIndex.maybeAppend(s.maxTimestamp, s.maxTimestampOffset, false); err != nil {
			return err
		}
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += int64(h.Size())
	s.size = position + int64(h.Size())
	s.nextOffset = h.LastOffset() + 1
	return nil
}

// readHeaderAt reads the batch header at position, bounded by limit.
func (s *segment) readHeaderAt(buf []byte, position, limit int64) (batch.Header, error) {
	if limit-position < batch.HeaderSize {
		return batch.Header{}, fmt.Errorf("%w: %d bytes left at position %d", batch.ErrTruncated, limit-position, position)
	}
	buf = buf[:batch.HeaderSize]
	if _, err := s.log.ReadAt(buf, position); err != nil {
		return batch.Header{}, fmt.Errorf("read batch header at %d: %w", position, err)
	}
	h, err := batch.ParseHeader(buf)
	if err != nil {
		return h, err
	}
	if position+int64(h.Size()) > limit {
		return h, fmt.Errorf("%w: batch at %d ends past %d", batch.ErrTruncated, position, limit)
	}
	return h, nil
}

// findBatch returns the position and header of the first batch whose last
// offset is >= offset, scanning from the index entry below it; found is
// false when no batch of the segment qualifies.
func (s *segment) findBatch(buf []byte, offset int64) (int64, batch.Header, bool, error) {
	pos := s.index.lookup(offset).Position
	for pos < s.size {
		h, err := s.readHeaderAt(buf, pos, s.size)
		if err != nil {
			return 0, h, false, fmt.Errorf("segment %d: %w", s.baseOffset, err)
		}
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
		pos += int64(h.Size())
	}
	return 0, batch.Header{}, false, nil
}

// renameDeleted renames the files to *.deleted; open handles stay valid.
func (s *segment) renameDeleted() error {
	for i, p := range s.paths() {
		var err error
		if cf := asCached(s.log); i == 0 && cf != nil {
			err = cf.rename(p + deletedSuffix) // a reopen must find it
		} else {
			err = s.fs.Rename(p, p+deletedSuffix)
		}
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("rename %s for deletion: %w", p, err)
		}
	}
	s.deleted = true
	p := s.paths()
	s.index.file.renamed(p[1] + deletedSuffix)
	s.timeIndex.file.renamed(p[2] + deletedSuffix)
	// Readers of a deleted segment (Slices handed out before it went)
	// need only its .log; lookups use the indexes' entries in memory. As
	// Kafka, which holds no index descriptors, close them now rather than
	// after file.delete.delay.ms: a log cleaned often replaces segments
	// faster than the delay lets their descriptors go.
	if err := s.closeIndexes(); err != nil {
		return fmt.Errorf("segment %d: close deleted indexes: %w", s.baseOffset, err)
	}
	return nil
}

// closeIndexes releases the index descriptors; a later write reopens them.
func (s *segment) closeIndexes() error {
	var errs []error
	if s.index != nil {
		errs = append(errs, s.index.file.close())
	}
	if s.timeIndex != nil {
		errs = append(errs, s.timeIndex.file.close())
	}
	return errors.Join(errs...)
}

// changeSuffix renames the files from the current suffix to suffix, the
// log file last: a .log with a suffix is what marks the change as made for
// recovery. Open handles stay valid.
func (s *segment) changeSuffix(suffix string) error {
	from := s.paths()
	s.suffix = suffix
	to := s.paths()
	if err := s.index.file.rename(to[1]); err != nil {
		return fmt.Errorf("rename %s: %w", from[1], err)
	}
	if err := s.timeIndex.file.rename(to[2]); err != nil {
		return fmt.Errorf("rename %s: %w", from[2], err)
	}
	if s.txnIndex.file != nil { // else no .txnindex: no aborted transaction
		if err := s.fs.Rename(from[3], to[3]); err != nil {
			return fmt.Errorf("rename %s: %w", from[3], err)
		}
	}
	rename := s.fs.Rename
	if cf := asCached(s.log); cf != nil {
		rename = func(_, to string) error { return cf.rename(to) }
	}
	if err := rename(from[0], to[0]); err != nil {
		return fmt.Errorf("rename %s: %w", from[0], err)
	}
	s.txnIndex.name = to[3]
	return nil
}

// closeFiles closes the handles; inactive indexes were trimmed at roll.
func (s *segment) closeFiles() error {
	errs := []error{s.closeIndexes()}
	if s.log != nil {
		if err := s.log.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if err := s.txnIndex.close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeFiles closes the handles and removes the (renamed) files.
func (s *segment) removeFiles() error {
	err := s.closeFiles()
	for _, p := range s.paths() {
		if s.deleted {
			p += deletedSuffix
		}
		if rerr := s.fs.Remove(p); rerr != nil && !os.IsNotExist(rerr) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

// writeIndexes puts pending index entries into the files; the caller holds
// the Log's mu (the entries are shared with readers).
func (s *segment) writeIndexes() error {
	if err := s.index.writePending(); err != nil {
		return fmt.Errorf("segment %d: %w", s.baseOffset, err)
	}
	if err := s.timeIndex.writePending(); err != nil {
		return fmt.Errorf("segment %d: %w", s.baseOffset, err)
	}
	return nil
}

// sync fsyncs the files; call writeIndexes first.
func (s *segment) sync() error {
	if err := s.log.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("sync segment %d: %w", s.baseOffset, err)
	}
	for _, x := range []*indexFile{&s.index.file, &s.timeIndex.file} {
		if err := x.sync(); err != nil {
			return fmt.Errorf("sync segment %d: %w", s.baseOffset, err)
		}
	}
	return s.txnIndex.sync()
}
