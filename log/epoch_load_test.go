package log

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func readEpochFile(t *testing.T, dir string) []epochEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, leaderEpochCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	e, err := decodeEpochCheckpoint(data)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestLoadDefersEpochCheckpointRewrite: a load that only drops epochs
// starting at the log end (terms that wrote nothing, as every election of
// an idle partition leaves) does not rewrite the leader-epoch checkpoint,
// which cost an idle partition two fsyncs at every restart before the
// rewrite its next epoch makes anyway. The next append rewrites it first,
// so that a crash after records pass the dropped epoch's start cannot
// bring that epoch back.
func TestLoadDefersEpochCheckpointRewrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	clock := newManualClock()
	l := openTestLog(t, dir, DefaultConfig(), clock, Options{})
	mustAppend(t, l, buildBatch(plainSpec(clock.Now().UnixMilli()), nRecords(1, 10)), 3)
	if err := l.AssignEpochStartOffset(5, 1); err != nil {
		t.Fatal(err)
	}
	l.Close()
	// A file naming an epoch at the log end, as Kafka and Brook before
	// AssignEpochStartOffset deferred such writes left it.
	written := []epochEntry{{3, 0}, {5, 1}}
	if err := os.WriteFile(filepath.Join(dir, leaderEpochCheckpointFile), encodeEpochCheckpoint(written), 0o644); err != nil {
		t.Fatal(err)
	}

	l = openTestLog(t, dir, DefaultConfig(), clock, Options{})
	if e, o := l.EndOffsetForEpoch(3); e != 3 || o != 1 {
		t.Fatalf("after the load epoch 3 ends at (%d, %d), want (3, 1): epoch 5 dropped", e, o)
	}
	if got := readEpochFile(t, dir); !slices.Equal(got, written) {
		t.Fatalf("the load rewrote the checkpoint to %v", got)
	}
	// Records of epoch 3 land past offset 1 (a follower copying them, or
	// here a leader of that epoch): the file must not say epoch 5 starts
	// there.
	mustAppend(t, l, buildBatch(plainSpec(clock.Now().UnixMilli()), nRecords(1, 10)), 3)
	if got, want := readEpochFile(t, dir), []epochEntry{{3, 0}}; !slices.Equal(got, want) {
		t.Fatalf("after an append the checkpoint is %v, want %v", got, want)
	}
	l.Close()
	l = openTestLog(t, dir, DefaultConfig(), clock, Options{})
	defer l.Close()
	if e, o := l.EndOffsetForEpoch(3); e != 3 || o != 2 {
		t.Fatalf("epoch 3 ends at (%d, %d), want (3, 2)", e, o)
	}
}

// TestAssignEpochAtLogEndDefersCheckpoint: a new leader's epoch, starting
// at the log end, is answered from memory at once but reaches the
// checkpoint only with the first record of the epoch (a load would drop
// it before that anyway); an epoch starting below the log end, or one
// that drops a newer epoch with records, is written at once.
func TestAssignEpochAtLogEndDefersCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	clock := newManualClock()
	l := openTestLog(t, dir, DefaultConfig(), clock, Options{})
	defer l.Close()
	mustAppend(t, l, buildBatch(plainSpec(clock.Now().UnixMilli()), nRecords(2, 10)), 3)
	if err := l.AssignEpochStartOffset(5, 2); err != nil {
		t.Fatal(err)
	}
	if e, o := l.EndOffsetForEpoch(5); e != 5 || o != 2 {
		t.Fatalf("epoch 5 ends at (%d, %d), want (5, 2)", e, o)
	}
	if got, want := readEpochFile(t, dir), []epochEntry{{3, 0}}; !slices.Equal(got, want) {
		t.Fatalf("checkpoint %v right after the assignment, want %v", got, want)
	}
	mustAppend(t, l, buildBatch(plainSpec(clock.Now().UnixMilli()), nRecords(1, 10)), 5)
	if got, want := readEpochFile(t, dir), []epochEntry{{3, 0}, {5, 2}}; !slices.Equal(got, want) {
		t.Fatalf("checkpoint %v after a record of epoch 5, want %v", got, want)
	}
	// Below the log end: written at once.
	if err := l.AssignEpochStartOffset(6, 1); err != nil {
		t.Fatal(err)
	}
	if got, want := readEpochFile(t, dir), []epochEntry{{3, 0}, {6, 1}}; !slices.Equal(got, want) {
		t.Fatalf("checkpoint %v after epoch 6 at offset 1, want %v", got, want)
	}
	// At the log end, but dropping epoch 6, which has records: at once.
	if err := l.AssignEpochStartOffset(4, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if got, want := readEpochFile(t, dir), []epochEntry{{3, 0}, {4, 3}}; !slices.Equal(got, want) {
		t.Fatalf("checkpoint %v after epoch 4 at the log end, want %v", got, want)
	}
}
