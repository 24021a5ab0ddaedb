package log

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openFilesUnder counts this process's descriptors on files under dir
// (/proc/self/fd, Linux).
func openFilesUnder(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("list /proc/self/fd: %v", err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// TestIdleLogHoldsOneDescriptor: an idle partition costs one descriptor
// (its active .log), new, reopened after a clean shutdown, and recovered
// after a crash; its indexes open when first written. 10,000 partitions
// at three descriptors each would not fit a 20,000 ulimit -n.
func TestIdleLogHoldsOneDescriptor(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	clock := newManualClock()
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 1
	l := openTestLog(t, dir, cfg, clock, Options{})
	if n := openFilesUnder(t, dir); n != 1 {
		t.Fatalf("new idle log holds %d descriptors, want 1", n)
	}
	if st, err := os.Stat(filepath.Join(dir, "00000000000000000000.index")); err != nil || st.Size() != int64(cfg.SegmentIndexBytes/offsetEntrySize*offsetEntrySize) {
		t.Fatalf("active .index not preallocated: %v, %v", st, err)
	}
	mustAppend(t, l, buildBatch(plainSpec(clock.Now().UnixMilli()), nRecords(2, 10)), 0)
	mustAppend(t, l, buildBatch(plainSpec(clock.Now().UnixMilli()+1), nRecords(2, 10)), 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := openFilesUnder(t, dir); n != 3 {
		t.Fatalf("written log holds %d descriptors, want 3 (.log, .index, .timeindex)", n)
	}
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := openFilesUnder(t, dir); n != 0 {
		t.Fatalf("closed log holds %d descriptors", n)
	}

	l = openTestLog(t, dir, cfg, clock, Options{CleanShutdown: true, RecoveryPoint: leo})
	if n := openFilesUnder(t, dir); n != 1 {
		t.Fatalf("log reopened after a clean shutdown holds %d descriptors, want 1", n)
	}
	if got := l.LogEndOffset(); got != leo {
		t.Fatalf("LEO after reopen %d, want %d", got, leo)
	}
	checkIndexesAgree(t, l)
	crash(l)

	l = openTestLog(t, dir, cfg, clock, Options{})
	defer l.Close()
	if n := openFilesUnder(t, dir); n != 1 {
		t.Fatalf("log recovered after a crash holds %d descriptors, want 1", n)
	}
	if got := l.LogEndOffset(); got != leo {
		t.Fatalf("LEO after recovery %d, want %d", got, leo)
	}
	checkIndexesAgree(t, l)
	if len(l.active().index.rel) == 0 {
		t.Fatal("recovery rebuilt no index entries")
	}
}
