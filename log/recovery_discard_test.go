package log

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
)

// indexOpeningFS records the index files opened.
type indexOpeningFS struct {
	OSFS
	mu     sync.Mutex
	opened []string
}

func (f *indexOpeningFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if strings.HasSuffix(name, indexSuffix) || strings.HasSuffix(name, timeIndexSuffix) {
		f.mu.Lock()
		f.opened = append(f.opened, filepath.Base(name))
		f.mu.Unlock()
	}
	return f.OSFS.OpenFile(name, flag, perm)
}

func (f *indexOpeningFS) opens() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.opened)
}

// indexEntries copies the offset index of l's segments, as (relative
// offset, position) pairs per segment.
func indexEntries(l *Log) [][2][]uint32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out [][2][]uint32
	for _, s := range l.segments {
		out = append(out, [2][]uint32{slices.Clone(s.index.rel), slices.Clone(s.index.pos)})
	}
	return out
}

// TestUncleanLoadDiscardsIndexesLazily: after kill -9 the load scans the
// active segment and rebuilds its indexes in memory without opening their
// files. The stale files survive a second kill -9 before anything was
// written (the next load scans again), and the first write replaces their
// content: after it, and after a clean close, the files hold exactly the
// rebuilt entries, which a clean start then trusts.
func TestUncleanLoadDiscardsIndexesLazily(t *testing.T) {
	clock := newManualClock()
	dense := DefaultConfig()
	dense.IndexIntervalBytes = 64 // an entry per batch: the file holds many
	dir := filepath.Join(t.TempDir(), "t-0")
	model, flushed := crashAfterFlush(t, dir, dense, clock, 30, 100)

	// Sparser now, so the rebuild differs from what the file holds.
	sparse := DefaultConfig()
	sparse.IndexIntervalBytes = 1000
	var l *Log
	for round := range 2 {
		fsys := &indexOpeningFS{}
		l = openTestLog(t, dir, sparse, clock, Options{FS: fsys, RecoveryPoint: flushed})
		if got := fsys.opens(); len(got) > 0 {
			t.Fatalf("load %d opened index files %v; the scan of an idle active segment needs none", round, got)
		}
		for _, m := range []appended{model[0], model[len(model)/2], model[len(model)-1]} {
			mustReadBatch(t, l, m)
		}
		if round == 0 {
			crash(l) // before anything touched the stale files
		}
	}
	st, err := os.Stat(filepath.Join(dir, "00000000000000000000.index"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() == 0 {
		t.Fatal("the stale index file was cut at load; the test needs it whole")
	}
	model = append(model, mustAppend(t, l, buildBatch(plainSpec(clock.Now().UnixMilli()), nRecords(2, 100)), 1))
	want := indexEntries(l)
	if len(want) != 1 || len(want[0][0]) == 0 || len(want[0][0]) >= len(model)-1 {
		t.Fatalf("rebuilt index %v: want a few entries, fewer than the %d batches", want, len(model))
	}
	// The flush writes the rebuilt entries over a discarded file: what
	// follows them is the preallocated zeros, not the old dense entries.
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "00000000000000000000.index"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(want[0][0]) * offsetEntrySize; len(data) < n || slices.ContainsFunc(data[n:], func(b byte) bool { return b != 0 }) {
		t.Fatalf("index file after the flush: %d bytes, stale entries after the %d rebuilt ones", len(data), len(want[0][0]))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "00000000000000000000.index")); err != nil || st.Size() != int64(len(want[0][0]))*offsetEntrySize {
		t.Fatalf("index file after a clean close: %v, %v; want %d entries", st, err, len(want[0][0]))
	}
	l = openTestLog(t, dir, sparse, clock, Options{CleanShutdown: true, RecoveryPoint: l.LogEndOffset()})
	defer l.Close()
	if got := indexEntries(l); !slices.EqualFunc(got, want, func(a, b [2][]uint32) bool {
		return slices.Equal(a[0], b[0]) && slices.Equal(a[1], b[1])
	}) {
		t.Fatalf("clean start read index %v, want the rebuilt %v", got, want)
	}
	for _, m := range model {
		mustReadBatch(t, l, m)
	}
}

// crashAfterFlush writes n batches of two size-byte records to a new log in
// dir, flushes them and abandons the log as kill -9 would; it returns the
// batches and the flushed log end.
func crashAfterFlush(t *testing.T, dir string, cfg Config, clock *testutil.Clock, n, size int) ([]appended, int64) {
	t.Helper()
	l := openTestLog(t, dir, cfg, clock, Options{})
	var model []appended
	for range n {
		model = append(model, mustAppend(t, l, buildBatch(plainSpec(clock.Now().UnixMilli()), nRecords(2, size)), 1))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	flushed := l.LogEndOffset()
	crash(l)
	return model, flushed
}

// mustReadBatch fails unless a read at m's first offset starts with m.
func mustReadBatch(t *testing.T, l *Log, m appended) {
	t.Helper()
	if s := mustRead(t, l, m.first); !strings.HasPrefix(string(readAllSlice(t, s)), string(m.data)) {
		t.Fatalf("read at %d does not start with the batch appended there", m.first)
	}
}
