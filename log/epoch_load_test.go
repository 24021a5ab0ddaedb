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
	written := []epochEntry{{3, 0}, {5, 1}}
	if got := readEpochFile(t, dir); !slices.Equal(got, written) {
		t.Fatalf("checkpoint %v, want %v", got, written)
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
