package log

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestUncleanLoadAtRecoveryPointSyncsNothing: after kill -9, a partition
// whose log ends at its recovery point (flushed, idle since) is scanned
// but not fsynced again; one with records past the recovery point is, and
// its recovery point then moves to the log end. The scanned active
// segment's rebuilt index entries reach its file at the next clean close.
func TestUncleanLoadAtRecoveryPointSyncsNothing(t *testing.T) {
	clock := newManualClock()
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 512
	dir := filepath.Join(t.TempDir(), "t-0")
	model, flushed := crashAfterFlush(t, dir, cfg, clock, 20, 300)

	logSynced := func(fsys *syncRecordingFS) bool {
		fsys.mu.Lock()
		defer fsys.mu.Unlock()
		return slices.ContainsFunc(fsys.synced, func(n string) bool { return strings.HasSuffix(n, ".log") })
	}
	fsys := &syncRecordingFS{}
	l := openTestLog(t, dir, cfg, clock, Options{FS: fsys, RecoveryPoint: flushed})
	if logSynced(fsys) {
		t.Fatalf("a log ending at its recovery point was fsynced at load: %v", fsys.synced)
	}
	if rp := l.RecoveryPoint(); rp != flushed {
		t.Fatalf("recovery point %d, want %d", rp, flushed)
	}
	// The rebuilt index serves reads from the middle.
	mustReadBatch(t, l, model[len(model)/2])
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "00000000000000000000.index"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() == 0 {
		t.Fatal("the index rebuilt at load was not written at close")
	}

	// Records past the recovery point: scanned, made durable, recovery
	// point at the log end.
	l = openTestLog(t, dir, cfg, clock, Options{CleanShutdown: true})
	mustAppend(t, l, buildBatch(plainSpec(clock.Now().UnixMilli()), nRecords(2, 300)), 1)
	leo := l.LogEndOffset()
	crash(l)
	fsys = &syncRecordingFS{}
	l = openTestLog(t, dir, cfg, clock, Options{FS: fsys, RecoveryPoint: flushed})
	defer l.Close()
	if !logSynced(fsys) {
		t.Fatal("records past the recovery point were not fsynced at load")
	}
	if rp := l.RecoveryPoint(); rp != leo {
		t.Fatalf("recovery point %d, want the log end %d", rp, leo)
	}
}

// readDirCountingFS counts the listings of one directory.
type readDirCountingFS struct {
	OSFS
	dir   string
	mu    sync.Mutex
	lists int
}

func (f *readDirCountingFS) ReadDir(name string) ([]os.DirEntry, error) {
	if name == f.dir {
		f.mu.Lock()
		f.lists++
		f.mu.Unlock()
	}
	return f.OSFS.ReadDir(name)
}

// TestLoadListsItsDirOnce: a load after kill -9 lists the partition's
// directory once for the swaps, the clean-up, the segments and the
// producer snapshots, and still does each: the stale file goes, every
// segment and the open transaction are back.
func TestLoadListsItsDirOnce(t *testing.T) {
	clock := newManualClock()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4096
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openTestLog(t, dir, cfg, clock, Options{})
	mustOp(t, l, dataOp(1, 0, 0, 1, true)) // open at offset 0
	for range 200 {
		mustOp(t, l, dataOp(-1, 0, 0, 5, false))
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	segments, leo := len(l.segments), l.LogEndOffset()
	if segments < 3 {
		t.Fatalf("%d segments: the test needs rolls (and their producer snapshots)", segments)
	}
	crash(l)
	stale := filepath.Join(dir, "leftover.tmp")
	if err := os.WriteFile(stale, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys := &readDirCountingFS{dir: dir}
	l = openTestLog(t, dir, cfg, clock, Options{FS: fsys, RecoveryPoint: leo})
	defer l.Close()
	if fsys.lists != 1 {
		t.Fatalf("the load listed %s %d times, want once", dir, fsys.lists)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("stale file still there: %v", err)
	}
	if len(l.segments) != segments || l.LogEndOffset() != leo {
		t.Fatalf("loaded %d segments ending at %d, want %d ending at %d", len(l.segments), l.LogEndOffset(), segments, leo)
	}
	l.SetHighWatermark(leo)
	if lso := l.LastStableOffset(); lso != 0 {
		t.Fatalf("last stable offset %d after the load, want 0 (the open transaction)", lso)
	}
}
