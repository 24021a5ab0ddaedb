package log

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// failDisk makes a log dir unusable the way a lost disk does, for root as
// well (permissions would not stop root): the directory is moved away and
// a plain file takes its path, so every new file in it fails with ENOTDIR
// while already open segments still accept writes, as on a disk that
// fails only some operations.
func failDisk(t *testing.T, dir string) {
	t.Helper()
	if err := os.Rename(dir, dir+".gone"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
}

type dirFailures struct {
	mu  sync.Mutex
	got map[string][]TopicPartition
}

func (f *dirFailures) record(dir string, tps []TopicPartition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	slices.SortFunc(tps, func(a, b TopicPartition) int { return int(a.Partition - b.Partition) })
	f.got[dir] = append(f.got[dir], tps...)
}

func (f *dirFailures) of(dir string) ([]TopicPartition, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tps, ok := f.got[dir]
	return tps, ok
}

// openTwoDirs opens a Manager over two log dirs with smallConfig, recording
// the dir failures it reports.
func openTwoDirs(t *testing.T) (*Manager, []string, *dirFailures) {
	t.Helper()
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	failures := &dirFailures{got: map[string][]TopicPartition{}}
	cfg := smallConfig()
	m, err := OpenManager(ManagerConfig{Dirs: dirs, BrokerID: 1, ClusterID: "c1", Now: newManualClock().Now, OnDirFailure: failures.record},
		func(TopicPartition) Config { return cfg })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, dirs, failures
}

// A log dir whose checkpoint cannot be written goes offline with only its
// partitions; the other dir keeps serving and takes new partitions.
func TestFailedLogDirTakesOnlyItsPartitionsOffline(t *testing.T) {
	m, dirs, failures := openTwoDirs(t)
	cfg := smallConfig()
	inDir := map[string][]TopicPartition{}
	for p := int32(0); p < 4; p++ {
		tp := TopicPartition{"t", p}
		l, err := m.GetOrCreate(tp, [16]byte{1}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, buildBatch(plainSpec(1), nRecords(2, 100)), 0)
		inDir[filepath.Dir(l.Dir())] = append(inDir[filepath.Dir(l.Dir())], tp)
	}
	failDisk(t, dirs[0])
	if err := m.writeCheckpoint(highWatermarkCheckpointFile, (*Log).HighWatermark); err == nil {
		t.Fatal("checkpoint into the failed dir succeeded")
	}
	got, ok := failures.of(dirs[0])
	if !ok || !slices.Equal(got, inDir[dirs[0]]) {
		t.Fatalf("failure reported %v (%v), want %v", got, ok, inDir[dirs[0]])
	}
	if _, ok := failures.of(dirs[1]); ok {
		t.Fatal("the healthy dir was reported failed")
	}
	if off := m.OfflineDirs(); !slices.Equal(off, dirs[:1]) {
		t.Fatalf("offline dirs %v", off)
	}
	for _, tp := range inDir[dirs[0]] {
		if m.Get(tp) != nil || !m.IsOffline(tp) {
			t.Fatalf("%s still online", tp)
		}
		if _, err := m.GetOrCreate(tp, [16]byte{1}, cfg); !errors.Is(err, ErrLogDirOffline) {
			t.Fatalf("GetOrCreate(%s) = %v, want ErrLogDirOffline", tp, err)
		}
	}
	for _, tp := range inDir[dirs[1]] {
		mustAppend(t, m.Get(tp), buildBatch(plainSpec(1), nRecords(2, 100)), 0)
	}
	l, err := m.GetOrCreate(TopicPartition{"t", 9}, [16]byte{1}, cfg)
	if err != nil || filepath.Dir(l.Dir()) != dirs[1] {
		t.Fatalf("new partition: %v in %v, want in %s", err, l, dirs[1])
	}
	// The failed dir gets no clean-shutdown marker; the healthy one does.
	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dirs[1], cleanShutdownFile)); err != nil {
		t.Fatalf("healthy dir: %v", err)
	}
}

// An append that cannot roll into a new segment takes the dir offline.
func TestAppendIOErrorTakesLogDirOffline(t *testing.T) {
	m, _, _ := openTwoDirs(t)
	cfg := smallConfig()
	tp := TopicPartition{"t", 0}
	l, err := m.GetOrCreate(tp, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	failDisk(t, filepath.Dir(l.Dir()))
	var appendErr error
	for range 100 { // segment.bytes is 8 KiB: a roll comes within 100 KiB
		if _, appendErr = l.Append(buildBatch(plainSpec(1), nRecords(1, 1000)), 0); appendErr != nil {
			break
		}
	}
	if appendErr == nil {
		t.Fatal("appends kept succeeding in the failed dir")
	}
	testutil.Eventually(t, 10*time.Second, func() error {
		if !m.IsOffline(tp) {
			return errors.New("partition still online")
		}
		return nil
	})
}

// A log dir that cannot be opened at startup starts offline; the broker
// starts on the others, and fails only when none is left.
func TestLogDirOfflineAtStartup(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	if err := os.WriteFile(dirs[0], []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := OpenManager(ManagerConfig{Dirs: dirs, BrokerID: 1, ClusterID: "c1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if off := m.OfflineDirs(); !slices.Equal(off, dirs[:1]) {
		t.Fatalf("offline %v", off)
	}
	m.Close()
	if err := os.WriteFile(filepath.Join(root, "c"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenManager(ManagerConfig{Dirs: []string{dirs[0], filepath.Join(root, "c")}, BrokerID: 1, ClusterID: "c1"}, nil); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("all dirs failed: %v", err)
	}
}
