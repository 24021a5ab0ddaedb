package log

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestCloseKeepsAnUnchangedSnapshot: a clean shutdown writes the producer
// snapshot at the log end only when the file there does not already hold
// the same state. A log closed, opened and closed again without appends
// keeps the file the first close wrote; one whose snapshot was removed
// meanwhile, or whose producers changed, gets a new one; and an empty log
// without producers gets none, and opens again without it.
func TestCloseKeepsAnUnchangedSnapshot(t *testing.T) {
	clock := newManualClock()
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openTestLog(t, dir, DefaultConfig(), clock, Options{})
	snap := func(l *Log) string { return offsetFileName(dir, l.LogEndOffset(), snapshotSuffix) }
	// Opened as a manager opens a log after a clean shutdown.
	clean := Options{CleanShutdown: true, RecoveryPoint: math.MaxInt64}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if snaps, err := listSnapshots(OSFS{}, dir); err != nil || len(snaps) != 0 {
		t.Fatalf("an empty log's close left snapshots %v (%v)", snaps, err)
	}

	l = openTestLog(t, dir, DefaultConfig(), clock, Options{})
	idem := batchSpec{baseTimestamp: 10, producerID: 7, producerEpoch: 0, baseSequence: 0}
	mustAppend(t, l, buildBatch(idem, nRecords(2, 5)), 0)
	closeReopen := func() (before, after os.FileInfo) {
		t.Helper()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = openTestLog(t, dir, DefaultConfig(), clock, clean)
		before, err := os.Stat(snap(l))
		if err != nil {
			t.Fatalf("no snapshot at the log end after a clean close: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		after, err = os.Stat(snap(l))
		if err != nil {
			t.Fatalf("snapshot gone after the second close: %v", err)
		}
		l = openTestLog(t, dir, DefaultConfig(), clock, clean)
		return before, after
	}
	before, after := closeReopen()
	if !os.SameFile(before, after) {
		t.Fatal("a close without appends rewrote the snapshot the load had read")
	}

	// Removed behind the log's back, as a truncation would: written again.
	if err := os.Remove(snap(l)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(snap(l)); err != nil {
		t.Fatalf("a removed snapshot was not written again: %v", err)
	}
	l = openTestLog(t, dir, DefaultConfig(), clock, clean)

	// Same log end, other producers (the producer expired): written again.
	l.appendMu.Lock()
	delete(l.producers.producers, idem.producerID)
	l.appendMu.Unlock()
	before, err := os.Stat(snap(l))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	after, err = os.Stat(snap(l))
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Fatal("a changed producer state was not written at the same offset")
	}
	l = openTestLog(t, dir, DefaultConfig(), clock, clean)
	defer l.Close()
	// The expired producer is unknown again: any sequence is accepted.
	if _, err := l.Append(buildBatch(batchSpec{baseTimestamp: 20, producerID: 7, producerEpoch: 0, baseSequence: 40}, nRecords(1, 5)), 0); err != nil {
		t.Fatalf("the reopened log kept the producer its snapshot no longer had: %v", err)
	}
}
