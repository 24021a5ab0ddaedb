package log

import (
	"fmt"
	"slices"
	"sort"

	"github.com/brook-mq/brook/protocol/batch"
)

// Slice is a region of a segment file holding whole batches. Size 0 means
// there is nothing to read. The file stays open for file.delete.delay.ms
// after its segment is deleted, so a reader may use it that long.
type Slice struct {
	File File
	Pos  int64
	Size int32
	// LastOffset bounds the offsets of the region (when Size is
	// positive): at or past the last offset of its last batch and below
	// the first offset of the batch after (the same in a log without
	// gaps). A read_committed fetch asks for the aborted transactions up
	// to it.
	LastOffset int64
}

// ReadInto appends the region to buf. It uses ReadAt, so concurrent readers
// of one file do not share a file offset.
func (s Slice) ReadInto(buf []byte) ([]byte, error) {
	if s.Size <= 0 {
		return buf, nil
	}
	n := len(buf)
	buf = slices.Grow(buf, int(s.Size))[:n+int(s.Size)]
	if _, err := s.File.ReadAt(buf[n:], s.Pos); err != nil {
		return buf[:n], fmt.Errorf("read log slice at %d+%d: %w", s.Pos, s.Size, err)
	}
	return buf, nil
}

// Read returns whole batches, starting with the one that contains offset,
// each ending below maxOffset (exclusive, e.g. the high watermark), within
// maxBytes; with minOneBatch the first batch is returned even when it is
// larger. An offset at the log end offset, or at or past maxOffset, reads
// nothing; one below the log start offset or past the log end offset is
// ErrOffsetOutOfRange. Reads stay within one segment.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (Slice, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return Slice{}, ErrClosed
	}
	if offset < l.logStartOffset || offset > l.logEndOffset {
		return Slice{}, fmt.Errorf("%w: offset %d, log %s has [%d, %d]", ErrOffsetOutOfRange, offset, l.tp, l.logStartOffset, l.logEndOffset)
	}
	if offset == l.logEndOffset || offset >= maxOffset {
		return Slice{}, nil
	}
	var hdr [batch.HeaderSize]byte
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].baseOffset > offset }) - 1
	for i = max(i, 0); i < len(l.segments); i++ {
		s := l.segments[i]
		start, h, found, err := s.findBatch(hdr[:], offset)
		if err != nil {
			return Slice{}, err
		}
		if !found {
			continue // offset fell in a gap at the end of this segment
		}
		end, last := start, int64(-1)
		// The offset index says where batches start: the ones before the
		// last indexed batch within reach are taken without reading their
		// headers (a 1 MiB fetch of 16 KiB batches read 64 of them, a
		// pread each), and the walk goes on from there.
		skipped := false
		if to, ok := s.index.lastEntryWithin(start, start+int64(max(maxBytes, 0)), maxOffset); ok {
			if h, err = s.readHeaderAt(hdr[:], to, s.size); err != nil {
				return Slice{}, fmt.Errorf("segment %d: %w", s.baseOffset, err)
			}
			end, skipped = to, true
		}
		for {
			if h.LastOffset() >= maxOffset {
				break
			}
			size := int64(h.Size())
			if end-start+size > int64(max(maxBytes, 0)) && !(end == start && minOneBatch) {
				break
			}
			end += size
			last, skipped = h.LastOffset(), false
			if end >= s.size {
				break
			}
			if h, err = s.readHeaderAt(hdr[:], end, s.size); err != nil {
				return Slice{}, fmt.Errorf("segment %d: %w", s.baseOffset, err)
			}
		}
		if skipped {
			// The region ends at the batch h, unread before it: the
			// region's batches end below h's first offset.
			last = h.BaseOffset - 1
		}
		return Slice{File: s.log, Pos: start, Size: int32(end - start), LastOffset: last}, nil
	}
	return Slice{}, nil
}

// OffsetForTimestamp returns the first offset whose record timestamp is >=
// ts, searching the first segment whose largest timestamp reaches ts
// through its time index, as Kafka does. A result at or past maxOffset
// (the high watermark or last stable offset) is reported as not found.
func (l *Log) OffsetForTimestamp(ts, maxOffset int64) (offset, timestamp int64, found bool, err error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return 0, 0, false, ErrClosed
	}
	var hdr [batch.HeaderSize]byte
	for _, s := range l.segments {
		if s.largestTimestamp() < ts {
			continue
		}
		// The time index entry names the batch where the segment's max
		// timestamp first reached its value; every earlier record is older
		// than ts, so the scan starts at that batch (found through the
		// offset index), while records are filtered only by log start.
		_, tsOffset := s.timeIndex.lookup(ts)
		pos := s.index.lookup(max(tsOffset, l.logStartOffset)).Position
		for pos < s.size {
			h, err := s.readHeaderAt(hdr[:], pos, s.size)
			if err != nil {
				return 0, 0, false, fmt.Errorf("segment %d: %w", s.baseOffset, err)
			}
			if h.MaxTimestamp >= ts && h.LastOffset() >= l.logStartOffset {
				o, t, ok, err := s.firstRecordAtOrAfter(&h, pos, ts, l.logStartOffset, l.codecs)
				if err != nil {
					return 0, 0, false, err
				}
				if ok {
					if o >= maxOffset {
						return 0, 0, false, nil
					}
					return o, t, true, nil
				}
			}
			pos += int64(h.Size())
		}
		return 0, 0, false, nil
	}
	return 0, 0, false, nil
}

// MaxTimestamp answers ListOffsets -3: the largest timestamp in the log and
// the offset of the record carrying it; -1, -1 for an empty log.
func (l *Log) MaxTimestamp() (timestamp, offset int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var best *segment
	for _, s := range l.segments {
		if s.size > 0 && s.maxTimestamp >= 0 && (best == nil || s.maxTimestamp > best.maxTimestamp) {
			best = s
		}
	}
	if best == nil {
		return -1, -1
	}
	var hdr [batch.HeaderSize]byte
	pos := best.index.lookup(best.maxTimestampOffset).Position
	for pos < best.size {
		h, err := best.readHeaderAt(hdr[:], pos, best.size)
		if err != nil {
			break
		}
		if h.MaxTimestamp == best.maxTimestamp {
			if o, t, ok, err := best.firstRecordAtOrAfter(&h, pos, h.MaxTimestamp, h.BaseOffset, l.codecs); err == nil && ok {
				return t, o
			}
			return h.MaxTimestamp, h.LastOffset()
		}
		pos += int64(h.Size())
	}
	return best.maxTimestamp, best.maxTimestampOffset
}

// largestTimestamp is what retention and timestamp search compare: the max
// timestamp, or the file's modification time when no batch has one.
func (s *segment) largestTimestamp() int64 {
	if s.maxTimestamp >= 0 {
		return s.maxTimestamp
	}
	if st, err := s.log.Stat(); err == nil {
		return st.ModTime().UnixMilli()
	}
	return -1
}
