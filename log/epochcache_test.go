package log

import (
	"path/filepath"
	"testing"
)

func TestEpochCache(t *testing.T) {
	var c epochCache
	for _, e := range []epochEntry{{1, 0}, {1, 5}, {3, 10}, {4, 20}} {
		c.assign(e.Epoch, e.StartOffset)
	}
	want := []epochEntry{{1, 0}, {3, 10}, {4, 20}}
	if got := c.snapshot(); !equalEpochs(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	cases := []struct {
		req    int32
		epoch  int32
		offset int64
	}{
		{-1, -1, -1},
		{0, 0, 0},  // below all: requested epoch, first start offset
		{1, 1, 10}, // next epoch 3 starts at 10
		{2, 1, 10}, // unknown epoch between: floor epoch, next start
		{3, 3, 20},
		{4, 4, 30}, // latest: log end offset
		{5, -1, -1},
	}
	for _, tc := range cases {
		if e, o := c.endOffsetFor(tc.req, 30); e != tc.epoch || o != tc.offset {
			t.Errorf("endOffsetFor(%d) = %d, %d; want %d, %d", tc.req, e, o, tc.epoch, tc.offset)
		}
	}
	// A lower epoch at a later offset (a new leader with an older view)
	// drops the entries it contradicts, as Kafka's assign does.
	c2 := epochCache{entries: append([]epochEntry(nil), want...)}
	c2.assign(2, 15)
	if got := c2.snapshot(); !equalEpochs(got, []epochEntry{{1, 0}, {2, 15}}) {
		t.Fatalf("non-monotonic assign: %v", got)
	}
	c.truncateFromEnd(20)
	if got := c.snapshot(); !equalEpochs(got, []epochEntry{{1, 0}, {3, 10}}) {
		t.Fatalf("truncateFromEnd: %v", got)
	}
	c.truncateFromStart(12)
	if got := c.snapshot(); !equalEpochs(got, []epochEntry{{3, 12}}) {
		t.Fatalf("truncateFromStart: %v", got)
	}
	if c.epochFor(11) != -1 || c.epochFor(12) != 3 || c.epochFor(1000) != 3 {
		t.Fatalf("epochFor wrong")
	}
}

func equalEpochs(a, b []epochEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestAssignEpochStartOffset: a new leader's epoch answers (epoch, LEO)
// before anything is written in it, and the entry, persisted, survives a
// reopen once records follow it (an entry at the log end is dropped on
// reopen, as Kafka's truncateFromEnd does; the next election records it
// again).
func TestAssignEpochStartOffset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	clock := newManualClock()
	l := openTestLog(t, dir, smallConfig(), clock, Options{})
	mustAppend(t, l, buildBatch(plainSpec(1), nRecords(2, 10)), 1)
	if err := l.AssignEpochStartOffset(4, 2); err != nil {
		t.Fatal(err)
	}
	if e, o := l.EndOffsetForEpoch(4); e != 4 || o != 2 {
		t.Fatalf("EndOffsetForEpoch(4) = %d, %d; want 4, 2", e, o)
	}
	if e, o := l.EndOffsetForEpoch(3); e != 1 || o != 2 {
		t.Fatalf("EndOffsetForEpoch(3) = %d, %d; want 1, 2", e, o)
	}
	// Appending in the epoch keeps its start; a clean reopen (no scan)
	// finds it in the checkpoint.
	mustAppend(t, l, buildBatch(plainSpec(1), nRecords(1, 10)), 4)
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openTestLog(t, dir, smallConfig(), clock, Options{CleanShutdown: true, RecoveryPoint: leo})
	defer l2.Close()
	if e, o := l2.EndOffsetForEpoch(3); e != 1 || o != 2 {
		t.Fatalf("after reopen EndOffsetForEpoch(3) = %d, %d; want 1, 2", e, o)
	}
}
