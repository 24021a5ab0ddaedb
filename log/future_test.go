package log

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// readLogBytes returns every batch of l as stored.
func readLogBytes(t *testing.T, l *Log) []byte {
	t.Helper()
	var out []byte
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		s, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		b := readAllSlice(t, s)
		if len(b) == 0 {
			t.Fatalf("empty read at %d", off)
		}
		out = append(out, b...)
		off = s.LastOffset + 1
	}
	return out
}

// A replica moved to another log dir keeps every record, including those
// appended while it moved, and the same *Log keeps serving from the new
// dir; the old directory and the future one are gone afterwards.
func TestMoveReplicaBetweenLogDirs(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	cfg := smallConfig()
	m := openTestManager(t, dirs, newManualClock(), cfg)
	tp := TopicPartition{"moving", 0}
	l, err := m.GetOrCreate(tp, [16]byte{7}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(l.Dir()) != dirs[0] {
		t.Fatalf("created in %s", l.Dir())
	}
	for range 40 {
		mustAppend(t, l, buildBatch(plainSpec(1), nRecords(3, 300)), 2)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if err := m.MoveReplica(tp, dirs[1]); err != nil {
		t.Fatal(err)
	}
	fut, ok := m.Future(tp)
	if !ok || !strings.HasSuffix(filepath.Base(fut.Dir()), "-future") || filepath.Dir(fut.Dir()) != dirs[1] {
		t.Fatalf("future log %v %v", ok, fut)
	}
	// Appends go on while the copy runs.
	for range 20 {
		mustAppend(t, l, buildBatch(plainSpec(1), nRecords(3, 300)), 3)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if _, moving := m.Future(tp); moving || filepath.Dir(l.Dir()) != dirs[1] {
			return fmt.Errorf("still in %s", l.Dir())
		}
		return nil
	})
	if m.Get(tp) != l {
		t.Fatal("the manager holds another log after the move")
	}
	want := readLogBytes(t, l)
	mustAppend(t, l, buildBatch(plainSpec(1), nRecords(3, 300)), 3)
	m.runDeletions()
	ents, _ := os.ReadDir(dirs[0])
	for _, e := range ents {
		if e.IsDir() {
			t.Fatalf("left in the old dir: %s", e.Name())
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := openTestManager(t, dirs, newManualClock(), cfg)
	defer m2.Close()
	l2 := m2.Get(tp)
	if l2 == nil || filepath.Dir(l2.Dir()) != dirs[1] {
		t.Fatalf("after restart: %v", l2)
	}
	if got := readLogBytes(t, l2); !bytes.Equal(got[:len(want)], want) || l2.LogEndOffset() != l.LogEndOffset() {
		t.Fatalf("after restart: %d bytes, LEO %d; want a prefix of %d bytes, LEO %d", len(got), l2.LogEndOffset(), len(want), l.LogEndOffset())
	}
	if e := l2.LatestEpoch(); e != 3 {
		t.Fatalf("latest epoch %d after the move", e)
	}
}

func TestMoveReplicaErrors(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	cfg := smallConfig()
	m := openTestManager(t, dirs, newManualClock(), cfg)
	defer m.Close()
	tp := TopicPartition{"t", 0}
	if err := m.MoveReplica(tp, filepath.Join(root, "c")); !errors.Is(err, ErrLogDirNotFound) {
		t.Fatalf("unknown dir: %v", err)
	}
	// No replica yet: the dir is where it will be created.
	if err := m.MoveReplica(tp, dirs[1]); !errors.Is(err, ErrNoReplica) {
		t.Fatalf("no replica: %v", err)
	}
	l, err := m.GetOrCreate(tp, [16]byte{1}, cfg)
	if err != nil || filepath.Dir(l.Dir()) != dirs[1] {
		t.Fatalf("created in %v: %v", l, err)
	}
	// Moving it where it is does nothing.
	if err := m.MoveReplica(tp, dirs[1]); err != nil {
		t.Fatal(err)
	}
	if _, moving := m.Future(tp); moving {
		t.Fatal("a move to the current dir started")
	}
}
