package log

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/brook-mq/brook/protocol/batch"
)

// completeSwaps finishes cleanings interrupted after their commit, as
// Kafka's LogLoader does with .swap files: every segment file whose base
// offset lies within the offsets of a <base>.log.swap (from the smallest
// swap base to the largest swap's next offset) is one the swap replaces
// and is deleted, then each .swap is renamed to its final name. The
// swapped segments' indexes, .txnindex included, are dropped and rebuilt
// by a scan and the producer state replay (they may be half renamed; and
// an old .txnindex left next to the new segment would name aborted
// transactions the cleaning removed), so it returns their base offsets. .cleaned files, not yet
// committed, are left for cleanDir to delete. ents is l.dir's listing.
func (l *Log) completeSwaps(ents []os.DirEntry) (map[int64]bool, error) {
	swaps := map[int64]bool{}
	lo, hi := int64(-1), int64(-1)
	for _, e := range ents {
		base, ok := parseOffsetFileName(e.Name(), logSuffix+swapSuffix)
		if !ok {
			continue
		}
		next, err := scanNextOffset(l.fs, filepath.Join(l.dir, e.Name()), base)
		if err != nil {
			return nil, err
		}
		swaps[base] = true
		if lo < 0 || base < lo {
			lo = base
		}
		hi = max(hi, next)
	}
	if len(swaps) == 0 {
		return nil, nil
	}
	l.logger.Info("completing interrupted cleaner swap", "swaps", len(swaps), "from", lo, "to", hi)
	for _, e := range ents {
		name := e.Name()
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix,
			indexSuffix + swapSuffix, timeIndexSuffix + swapSuffix, txnIndexSuffix + swapSuffix} {
			o, ok := parseOffsetFileName(name, suf)
			replaced := ok && o >= lo && o < hi && !strings.HasSuffix(suf, swapSuffix)
			if replaced || (ok && strings.HasSuffix(suf, swapSuffix)) {
				if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !os.IsNotExist(err) {
					return nil, fmt.Errorf("complete swap: remove %s: %w", name, err)
				}
			}
		}
	}
	for base := range swaps {
		from := offsetFileName(l.dir, base, logSuffix+swapSuffix)
		if err := l.fs.Rename(from, offsetFileName(l.dir, base, logSuffix)); err != nil {
			return nil, fmt.Errorf("complete swap: %w", err)
		}
	}
	return swaps, l.fs.SyncDir(l.dir)
}

// scanNextOffset returns the offset after the last whole batch of a
// segment file, stepping over batch headers.
func scanNextOffset(fs FS, name string, base int64) (int64, error) {
	f, err := fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", name, err)
	}
	s := &segment{log: f, baseOffset: base}
	var hdr [batch.HeaderSize]byte
	next := base
	for pos := int64(0); pos < st.Size(); {
		h, err := s.readHeaderAt(hdr[:], pos, st.Size())
		if err != nil {
			break // recovery of the segment cuts what follows
		}
		next = max(next, h.LastOffset()+1)
		pos += int64(h.Size())
	}
	return next, nil
}
