package log

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUnchangedCheckpointNotRewritten: a checkpoint whose content has not
// changed since it was last written is left alone (an idle broker wrote
// its high watermarks, a file of every partition and an fsync, every 5 s);
// a changed one is written.
func TestUnchangedCheckpointNotRewritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, BrokerID: 1}, func(TopicPartition) Config { return DefaultConfig() })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 0}, [16]byte{1}, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, buildBatch(plainSpec(0), nRecords(3, 10)), 0)
	l.SetHighWatermark(2)
	path := filepath.Join(dir, highWatermarkCheckpointFile)
	write := func() os.FileInfo {
		t.Helper()
		if err := m.writeCheckpoint(highWatermarkCheckpointFile, (*Log).HighWatermark); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	first := write()
	if again := write(); !os.SameFile(first, again) {
		t.Fatal("an unchanged checkpoint was written again (the file was replaced)")
	}
	l.SetHighWatermark(3)
	changed := write()
	if os.SameFile(first, changed) {
		t.Fatal("a changed checkpoint was not written")
	}
	if cp, err := readOffsetCheckpoint(m.cfg.FS, path); err != nil || cp[TopicPartition{Topic: "t", Partition: 0}] != 3 {
		t.Fatalf("checkpoint %v (%v), want t-0 at 3", cp, err)
	}
}
