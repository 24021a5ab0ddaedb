package log

import (
	"encoding/binary"
	"path/filepath"
	"testing"
)

// A broker elected leader records its epoch's start at its log end; if it
// follows again before writing anything, its truncation to the log end
// must drop that epoch (Kafka's truncateTo does), or the first batch of
// the leader's older epoch fetched after it moves that epoch's start to
// the log end (the cache's assign drops every entry of its epoch and
// above), and offsets written in that epoch read as the one before.
// Simulation seed 625 lost acknowledged records this way: their leader
// epoch at the final leader was 1 instead of 2.
func TestTruncateToLogEndDropsEmptyEpoch(t *testing.T) {
	clock := newManualClock()
	cfg := smallConfig()
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openTestLog(t, dir, cfg, clock, Options{})
	mustAppend(t, l, buildBatch(plainSpec(1), nRecords(2, 10)), 1)        // 0-1
	mustAppend(t, l, buildBatch(plainSpec(1), nRecords(2, 10)), 2)        // 2-3
	if err := l.AssignEpochStartOffset(3, l.LogEndOffset()); err != nil { // elected at 4, wrote nothing
		t.Fatal(err)
	}
	if err := l.TruncateTo(l.LogEndOffset()); err != nil { // a follower again: cut where the leader's epoch 2 ends
		t.Fatal(err)
	}
	if got := l.LatestEpoch(); got != 2 {
		t.Fatalf("latest epoch %d after the truncation to the log end, want 2 (epoch 3 dropped)", got)
	}
	// The leader's next batch of epoch 2, as fetched: offset 4, stamped 2.
	b := buildBatch(plainSpec(1), nRecords(1, 10))
	binary.BigEndian.PutUint64(b[0:], 4)
	binary.BigEndian.PutUint32(b[12:], 2)
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	if got := l.LeaderEpochAt(2); got != 2 {
		t.Fatalf("offset 2 reads as epoch %d after the follower append, want 2", got)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, cfg, clock, Options{})
	defer l.Close()
	if got := l.LeaderEpochAt(2); got != 2 {
		t.Fatalf("offset 2 reads as epoch %d after reopening, want 2", got)
	}
	if e, o := l.EndOffsetForEpoch(2); e != 2 || o != 5 {
		t.Fatalf("EndOffsetForEpoch(2) = %d, %d after reopening; want 2, 5", e, o)
	}
}
