package log

import (
	"encoding/binary"
	"fmt"
	"sort"
)

const (
	offsetEntrySize = 8  // relative offset (4) + position (4)
	timeEntrySize   = 12 // timestamp (8) + relative offset (4)
)

// offsetIndex is a segment's sparse .index: it maps the last offset of some
// batches to the file position where that batch starts. The entries live in
// memory for lookups and are written through to the file, which is
// preallocated to segment.index.bytes while the segment is active and
// trimmed to its entries when the segment rolls or closes, as Kafka does.
//
// Invariant: relative offsets and positions strictly increase.
type offsetIndex struct {
	file       indexFile
	baseOffset int64
	maxEntries int
	rel        []uint32
	pos        []uint32
	written    int // entries already in the file
}

// indexPos is the result of a lookup: the batch starting at Position holds
// offsets up to at least Offset.
type indexPos struct {
	Offset   int64
	Position int64
}

// openOffsetIndex opens no descriptor: see indexFile.
func openOffsetIndex(fs FS, name string, baseOffset int64, maxBytes int32) *offsetIndex {
	return &offsetIndex{file: indexFile{fs: fs, name: name}, baseOffset: baseOffset, maxEntries: int(maxBytes) / offsetEntrySize}
}

// load reads the entries from the file. It stops at the first entry that is
// not strictly greater than the previous one (the zero-filled preallocated
// tail) and reports corruption if anything non-zero follows, or an entry
// points at or past logSize.
func (x *offsetIndex) load(logSize int64) error {
	data, err := x.file.readAll()
	if err != nil {
		return fmt.Errorf("read index: %w", err)
	}
	x.rel, x.pos = x.rel[:0], x.pos[:0]
	n := len(data) / offsetEntrySize
	var i int
	for i = 0; i < n; i++ {
		r := binary.BigEndian.Uint32(data[i*offsetEntrySize:])
		p := binary.BigEndian.Uint32(data[i*offsetEntrySize+4:])
		if i > 0 && (r <= x.rel[i-1] || p <= x.pos[i-1]) {
			break
		}
		if i == 0 && r == 0 && p == 0 {
			break
		}
		if int64(p) >= logSize {
			return fmt.Errorf("%w: index entry %d position %d beyond log size %d", ErrCorrupt, i, p, logSize)
		}
		x.rel = append(x.rel, r)
		x.pos = append(x.pos, p)
	}
	x.written = len(x.rel)
	for _, b := range data[i*offsetEntrySize:] {
		if b != 0 {
			return fmt.Errorf("%w: index has garbage after entry %d", ErrCorrupt, i)
		}
	}
	return nil
}

func (x *offsetIndex) entries() int { return len(x.rel) }
func (x *offsetIndex) isFull() bool { return len(x.rel) >= x.maxEntries }

// append adds an entry in memory; offset must exceed the last one.
func (x *offsetIndex) append(offset, position int64) error {
	if x.isFull() {
		return fmt.Errorf("index full at %d entries", len(x.rel))
	}
	r := uint32(offset - x.baseOffset)
	if n := len(x.rel); n > 0 && (r <= x.rel[n-1] || uint32(position) <= x.pos[n-1]) {
		return fmt.Errorf("index entry (%d, %d) not after last (%d, %d)", offset, position, x.baseOffset+int64(x.rel[n-1]), x.pos[n-1])
	}
	x.rel = append(x.rel, r)
	x.pos = append(x.pos, uint32(position))
	return nil
}

// writePending writes the entries not yet in the file, in one write.
func (x *offsetIndex) writePending() error {
	n := len(x.rel)
	if x.written >= n {
		return nil
	}
	buf := make([]byte, 0, (n-x.written)*offsetEntrySize)
	for i := x.written; i < n; i++ {
		buf = binary.BigEndian.AppendUint32(buf, x.rel[i])
		buf = binary.BigEndian.AppendUint32(buf, x.pos[i])
	}
	if err := x.file.writeAt(buf, int64(x.written)*offsetEntrySize); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	x.written = n
	return nil
}

// lookup returns the last entry with offset <= target, or the segment start.
func (x *offsetIndex) lookup(target int64) indexPos {
	t := target - x.baseOffset
	i := sort.Search(len(x.rel), func(i int) bool { return int64(x.rel[i]) > t })
	if i == 0 {
		return indexPos{Offset: x.baseOffset, Position: 0}
	}
	return indexPos{Offset: x.baseOffset + int64(x.rel[i-1]), Position: int64(x.pos[i-1])}
}

// lastEntryWithin returns the position of the last indexed batch that
// starts after from and at or before limit and whose last offset is below
// maxOffset; ok is false when there is none. Every batch before it starts
// at or after from, ends by limit and ends below maxOffset, so a read may
// take them whole without reading their headers.
func (x *offsetIndex) lastEntryWithin(from, limit, maxOffset int64) (position int64, ok bool) {
	byPos := sort.Search(len(x.pos), func(i int) bool { return int64(x.pos[i]) > limit })
	byOffset := sort.Search(len(x.rel), func(i int) bool { return x.baseOffset+int64(x.rel[i]) >= maxOffset })
	i := min(byPos, byOffset) - 1
	if i < 0 || int64(x.pos[i]) <= from {
		return 0, false
	}
	return int64(x.pos[i]), true
}

// truncateToPosition drops entries for batches at or past position.
func (x *offsetIndex) truncateToPosition(position int64) error {
	i := sort.Search(len(x.pos), func(i int) bool { return int64(x.pos[i]) >= position })
	x.rel, x.pos = x.rel[:i], x.pos[:i]
	x.written = min(x.written, i)
	return zeroTail(&x.file, int64(i)*offsetEntrySize)
}

// preallocate sizes the file for an active segment.
func (x *offsetIndex) preallocate() error {
	return x.file.truncate(int64(x.maxEntries) * offsetEntrySize)
}

// trim cuts the file to its entries, for an inactive or closed segment.
func (x *offsetIndex) trim() error {
	if err := x.writePending(); err != nil {
		return err
	}
	return x.file.truncate(int64(len(x.rel)) * offsetEntrySize)
}

// timeIndex is a segment's .timeindex: (max timestamp so far, offset of the
// batch holding it) pairs, appended only when the timestamp grows. One slot
// is kept free so that the final entry written at roll always fits, as in
// Kafka's TimeIndex.isFull.
type timeIndex struct {
	file       indexFile
	baseOffset int64
	maxEntries int
	ts         []int64
	rel        []uint32
	written    int // entries already in the file
}

// openTimeIndex opens no descriptor: see indexFile.
func openTimeIndex(fs FS, name string, baseOffset int64, maxBytes int32) *timeIndex {
	return &timeIndex{file: indexFile{fs: fs, name: name}, baseOffset: baseOffset, maxEntries: int(maxBytes) / timeEntrySize}
}

// load mirrors offsetIndex.load; nextOffset bounds the relative offsets.
func (x *timeIndex) load(nextOffset int64) error {
	data, err := x.file.readAll()
	if err != nil {
		return fmt.Errorf("read time index: %w", err)
	}
	x.ts, x.rel = x.ts[:0], x.rel[:0]
	n := len(data) / timeEntrySize
	var i int
	for i = 0; i < n; i++ {
		t := int64(binary.BigEndian.Uint64(data[i*timeEntrySize:]))
		r := binary.BigEndian.Uint32(data[i*timeEntrySize+8:])
		if t == 0 && r == 0 {
			break
		}
		if i > 0 && (t <= x.ts[i-1] || r < x.rel[i-1]) {
			return fmt.Errorf("%w: time index entry %d out of order", ErrCorrupt, i)
		}
		if x.baseOffset+int64(r) >= nextOffset {
			return fmt.Errorf("%w: time index entry %d offset beyond segment", ErrCorrupt, i)
		}
		x.ts = append(x.ts, t)
		x.rel = append(x.rel, r)
	}
	x.written = len(x.ts)
	for _, b := range data[i*timeEntrySize:] {
		if b != 0 {
			return fmt.Errorf("%w: time index has garbage after entry %d", ErrCorrupt, i)
		}
	}
	return nil
}

func (x *timeIndex) isFull() bool { return len(x.ts) >= x.maxEntries-1 }

// maybeAppend adds (ts, offset) in memory when ts is above the last entry; final
// skips the full check for the entry written as the segment goes inactive.
func (x *timeIndex) maybeAppend(ts, offset int64, final bool) error {
	n := len(x.ts)
	if n > 0 && ts <= x.ts[n-1] {
		return nil
	}
	if (!final && x.isFull()) || n >= x.maxEntries {
		return fmt.Errorf("time index full at %d entries", n)
	}
	r := uint32(offset - x.baseOffset)
	if n > 0 && r < x.rel[n-1] {
		return fmt.Errorf("time index offset %d before last", offset)
	}
	x.ts = append(x.ts, ts)
	x.rel = append(x.rel, r)
	return nil
}

// writePending writes the entries not yet in the file, in one write.
func (x *timeIndex) writePending() error {
	n := len(x.ts)
	if x.written >= n {
		return nil
	}
	buf := make([]byte, 0, (n-x.written)*timeEntrySize)
	for i := x.written; i < n; i++ {
		buf = binary.BigEndian.AppendUint64(buf, uint64(x.ts[i]))
		buf = binary.BigEndian.AppendUint32(buf, x.rel[i])
	}
	if err := x.file.writeAt(buf, int64(x.written)*timeEntrySize); err != nil {
		return fmt.Errorf("write time index: %w", err)
	}
	x.written = n
	return nil
}

// lookup returns the last entry with timestamp <= target; with none, the
// segment start (timestamp -1), where a scan must begin.
func (x *timeIndex) lookup(target int64) (ts, offset int64) {
	i := sort.Search(len(x.ts), func(i int) bool { return x.ts[i] > target })
	if i == 0 {
		return -1, x.baseOffset
	}
	return x.ts[i-1], x.baseOffset + int64(x.rel[i-1])
}

func (x *timeIndex) last() (ts, offset int64, ok bool) {
	n := len(x.ts)
	if n == 0 {
		return -1, -1, false
	}
	return x.ts[n-1], x.baseOffset + int64(x.rel[n-1]), true
}

// truncateToOffset drops entries whose offset is at or past offset.
func (x *timeIndex) truncateToOffset(offset int64) error {
	i := sort.Search(len(x.rel), func(i int) bool { return x.baseOffset+int64(x.rel[i]) >= offset })
	x.ts, x.rel = x.ts[:i], x.rel[:i]
	x.written = min(x.written, i)
	return zeroTail(&x.file, int64(i)*timeEntrySize)
}

func (x *timeIndex) preallocate() error {
	return x.file.truncate(int64(x.maxEntries) * timeEntrySize)
}

func (x *timeIndex) trim() error {
	if err := x.writePending(); err != nil {
		return err
	}
	return x.file.truncate(int64(len(x.ts)) * timeEntrySize)
}

// zeroTail clears the file from off on while keeping its length, so the
// preallocated area reads as empty slots again.
func zeroTail(f *indexFile, off int64) error {
	size, err := f.size()
	if err != nil {
		return err
	}
	if err := f.truncate(off); err != nil {
		return err
	}
	if size > off {
		return f.truncate(size)
	}
	return nil
}

func readAll(f File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && len(buf) > 0 {
		return nil, err
	}
	return buf, nil
}
