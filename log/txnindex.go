package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// AbortedTxn is one .txnindex entry, Kafka's AbortedTxn: a transaction of
// ProducerID that spans [FirstOffset, LastOffset] (LastOffset is its ABORT
// marker) and the partition's last stable offset when it was aborted, which
// lets a search stop early: no later entry can start below it.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// .txnindex entry, 34 bytes, big endian, as Kafka's TransactionIndex:
//
//	version int16 (0) | producerId int64 | firstOffset int64 |
//	lastOffset int64 | lastStableOffset int64
const (
	txnIndexSuffix    = ".txnindex"
	abortedTxnSize    = 34
	abortedTxnVersion = 0
)

func (a AbortedTxn) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, abortedTxnVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(b, uint64(a.LastStableOffset))
}

// decodeTxnIndex returns the entries of a .txnindex file. On a bad entry
// (wrong version, a partial tail, offsets out of order) it returns the
// valid prefix with ErrCorrupt, so that recovery can keep it and rebuild
// the rest.
func decodeTxnIndex(b []byte) ([]AbortedTxn, error) {
	var out []AbortedTxn
	for i := 0; len(b) > 0; i++ {
		if len(b) < abortedTxnSize {
			return out, fmt.Errorf("%w: txnindex: %d trailing bytes after entry %d", ErrCorrupt, len(b), i)
		}
		if v := int16(binary.BigEndian.Uint16(b)); v != abortedTxnVersion {
			return out, fmt.Errorf("%w: txnindex: entry %d has version %d", ErrCorrupt, i, v)
		}
		a := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		}
		if a.FirstOffset < 0 || a.LastOffset < a.FirstOffset || (len(out) > 0 && a.LastOffset <= out[len(out)-1].LastOffset) {
			return out, fmt.Errorf("%w: txnindex: entry %d spans %d..%d", ErrCorrupt, i, a.FirstOffset, a.LastOffset)
		}
		out = append(out, a)
		b = b[abortedTxnSize:]
	}
	return out, nil
}

// txnIndex is a segment's .txnindex: the transactions aborted by markers
// in the segment, in marker order. As in Kafka, the file exists only once
// it has an entry. entries is guarded by the Log's mu (readers search it);
// the file is written by appenders under appendMu.
//
// Invariant: LastOffset strictly increases.
type txnIndex struct {
	fs      FS
	name    string
	file    File // nil until the first entry
	entries []AbortedTxn
}

// openTxnIndex loads name if it exists. A damaged file is cut to its valid
// entries; damaged reports it, so that the caller replays the segment.
func openTxnIndex(fs FS, name string) (x *txnIndex, damaged bool, err error) {
	x = &txnIndex{fs: fs, name: name}
	data, err := fs.ReadFile(name)
	if os.IsNotExist(err) {
		return x, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", name, err)
	}
	x.entries, err = decodeTxnIndex(data)
	damaged = err != nil
	if x.file, err = fs.OpenFile(name, os.O_RDWR, 0o644); err != nil {
		return nil, false, fmt.Errorf("open %s: %w", name, err)
	}
	if damaged {
		if err := x.file.Truncate(int64(len(x.entries)) * abortedTxnSize); err != nil {
			x.file.Close()
			return nil, false, fmt.Errorf("truncate %s: %w", name, err)
		}
	}
	return x, damaged, nil
}

// lastOffset is the last entry's marker offset, -1 when empty.
func (x *txnIndex) lastOffset() int64 {
	if len(x.entries) == 0 {
		return -1
	}
	return x.entries[len(x.entries)-1].LastOffset
}

// write puts a into the file at the end of the current entries, creating
// it first if needed. The caller publishes a into entries (under mu)
// afterwards.
func (x *txnIndex) write(a AbortedTxn) error {
	if a.LastOffset <= x.lastOffset() {
		return fmt.Errorf("txnindex %s: entry for marker %d not after %d", x.name, a.LastOffset, x.lastOffset())
	}
	if x.file == nil {
		f, err := x.fs.OpenFile(x.name, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("create %s: %w", x.name, err)
		}
		x.file = f
	}
	if _, err := x.file.WriteAt(a.appendTo(nil), int64(len(x.entries))*abortedTxnSize); err != nil {
		return fmt.Errorf("write %s: %w", x.name, err)
	}
	return nil
}

// truncateTo drops the entries of markers at or after offset (a log
// truncation); the caller holds mu.
func (x *txnIndex) truncateTo(offset int64) error {
	n := len(x.entries)
	for n > 0 && x.entries[n-1].LastOffset >= offset {
		n--
	}
	if n == len(x.entries) {
		return nil
	}
	x.entries = x.entries[:n:n]
	if n == 0 {
		// Back to no entries: back to no file, as a segment that never
		// aborted a transaction.
		if err := x.file.Close(); err != nil {
			return fmt.Errorf("close %s: %w", x.name, err)
		}
		x.file = nil
		if err := x.fs.Remove(x.name); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove %s: %w", x.name, err)
		}
		return nil
	}
	if err := x.file.Truncate(int64(n) * abortedTxnSize); err != nil {
		return fmt.Errorf("truncate %s: %w", x.name, err)
	}
	return nil
}

// collect appends the entries that overlap [fetchOffset, upperBound), as
// Kafka's TransactionIndex.collectAbortedTxns; complete reports that no
// later segment can hold more (an entry's last stable offset reached
// upperBound, so every later transaction started at or after it).
func (x *txnIndex) collect(dst []AbortedTxn, fetchOffset, upperBound int64) ([]AbortedTxn, bool) {
	for _, a := range x.entries {
		if a.LastOffset >= fetchOffset && a.FirstOffset < upperBound {
			dst = append(dst, a)
		}
		if a.LastStableOffset >= upperBound {
			return dst, true
		}
	}
	return dst, false
}

func (x *txnIndex) sync() error {
	if x == nil || x.file == nil {
		return nil
	}
	if err := x.file.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("sync %s: %w", x.name, err)
	}
	return nil
}

func (x *txnIndex) close() error {
	if x == nil || x.file == nil {
		return nil
	}
	if err := x.file.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}
