package log

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
)

// TestManagerBoundsSegmentDescriptors: a broker with more partitions than
// brook.log.open.files.max holds at most that many segment descriptors,
// after creating them, after reading every one back (each read reopens an
// evicted .log), and after a restart; every partition keeps its records.
// Before the file cache each partition held its .log open: 16 of them.
func TestManagerBoundsSegmentDescriptors(t *testing.T) {
	const partitions, maxOpen = 16, 4
	dir := filepath.Join(t.TempDir(), "d")
	clock := newManualClock()
	open := func() *Manager {
		m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, BrokerID: 1, ClusterID: "c1", Now: clock.Now, MaxOpenFiles: maxOpen},
			func(TopicPartition) Config { return DefaultConfig() })
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	check := func(when string) {
		t.Helper()
		// +1: the log dir's .lock.
		if n := openFilesUnder(t, dir); n > maxOpen+1 {
			t.Fatalf("%s: %d descriptors open under the log dir, want at most %d and the .lock", when, n, maxOpen)
		}
	}
	m := open()
	want := map[TopicPartition][]byte{}
	for p := range partitions {
		tp := TopicPartition{Topic: "t", Partition: int32(p)}
		l, err := m.GetOrCreate(tp, [16]byte{1}, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		b := buildBatch(plainSpec(clock.Now().UnixMilli()), nRecords(3, 10+p))
		mustAppend(t, l, b, 0)
		want[tp] = b
	}
	check("after creating")
	readBack := func(m *Manager) {
		t.Helper()
		for tp, b := range want {
			l := m.Get(tp)
			s, err := l.Read(0, 1<<20, l.LogEndOffset(), true)
			if err != nil {
				t.Fatalf("%s: %v", tp, err)
			}
			if got := readAllSlice(t, s); !bytes.Equal(got[12:], b[12:]) { // base offset rewritten
				t.Fatalf("%s: read %d bytes, not what was appended", tp, len(got))
			}
		}
	}
	readBack(m)
	check("after reading every partition")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = open()
	defer m.Close()
	check("after a restart")
	readBack(m)
	check("after reading again")
}

// syncRecordingFS records the names of the files fsynced.
type syncRecordingFS struct {
	OSFS
	mu     sync.Mutex
	synced []string
}

type syncRecordingFile struct {
	*os.File
	fs   *syncRecordingFS
	name string
}

func (f *syncRecordingFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	of, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return syncRecordingFile{of, f, name}, nil
}

func (f syncRecordingFile) Sync() error {
	f.fs.mu.Lock()
	f.fs.synced = append(f.fs.synced, f.name)
	f.fs.mu.Unlock()
	return f.File.Sync()
}

// TestCachedFileSyncAfterEviction: a file written and then evicted is
// reopened by Sync and fsynced (its pages would otherwise never be made
// durable at roll or flush); one not written since its last Sync opens
// nothing.
func TestCachedFileSyncAfterEviction(t *testing.T) {
	dir := t.TempDir()
	fsys := &syncRecordingFS{}
	c := NewFileCache(1)
	a, err := c.openCached(fsys, filepath.Join(dir, "a"), os.O_CREATE|os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	b, err := c.openCached(fsys, filepath.Join(dir, "b"), os.O_CREATE|os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Open(); n != 1 {
		t.Fatalf("%d descriptors open, want 1 (a evicted)", n)
	}
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(fsys.synced, filepath.Join(dir, "a")) {
		t.Fatalf("the evicted, written file was not fsynced: %v", fsys.synced)
	}
	fsys.synced = nil
	if _, err := b.ReadAt(make([]byte, 0), 0); err != nil { // evicts a again
		t.Fatal(err)
	}
	reopens, _ := c.Stats()
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	if r, _ := c.Stats(); r != reopens || len(fsys.synced) != 0 {
		t.Fatalf("a clean evicted file was reopened (%d -> %d) or synced (%v)", reopens, r, fsys.synced)
	}
	for _, f := range []File{a, b} {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Open(); n != 0 {
		t.Fatalf("%d descriptors open after closing every file", n)
	}
	if _, err := a.ReadAt(make([]byte, 1), 0); err == nil {
		t.Fatal("read of a closed cached file succeeded")
	}
}

// TestCachedFilePinnedWhileSending: a descriptor lent to sendfile
// (SyscallConn().Control) stays open while fn runs, even when other files
// push the cache past its limit meanwhile; it is evicted once fn returns.
func TestCachedFilePinnedWhileSending(t *testing.T) {
	dir := t.TempDir()
	c := NewFileCache(1)
	a, err := c.openCached(OSFS{}, filepath.Join(dir, "a"), os.O_CREATE|os.O_RDWR)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("payload"), 0); err != nil {
		t.Fatal(err)
	}
	sc, ok := a.(syscall.Conn)
	if !ok {
		t.Fatal("a cached OS file does not lend its descriptor (syscall.Conn)")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var others []File
	var inner error
	err = raw.Control(func(fd uintptr) {
		for i := range 3 {
			f, err := c.openCached(OSFS{}, filepath.Join(dir, fmt.Sprint("o", i)), os.O_CREATE|os.O_RDWR)
			if err != nil {
				inner = err
				return
			}
			others = append(others, f)
		}
		buf := make([]byte, 7)
		if _, err := syscall.Pread(int(fd), buf, 0); err != nil || string(buf) != "payload" {
			inner = fmt.Errorf("pread of the lent descriptor: %q, %v", buf, err)
		}
	})
	if err != nil || inner != nil {
		t.Fatal(err, inner)
	}
	if n := c.Open(); n != 1 {
		t.Fatalf("%d descriptors open after the send, want 1", n)
	}
	buf := make([]byte, 7)
	if _, err := a.ReadAt(buf, 0); err != nil || string(buf) != "payload" {
		t.Fatalf("reopened read: %q, %v", buf, err)
	}
	for _, f := range append(others, a) {
		f.Close()
	}
}

// TestEvictedSegmentReadableAfterRenames: a Slice whose .log descriptor
// was evicted is still readable after its segment is renamed for deletion
// and after its partition's directory is renamed by Manager.Delete: the
// reopen follows the renames.
func TestEvictedSegmentReadableAfterRenames(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	clock := newManualClock()
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, BrokerID: 1, ClusterID: "c1", Now: clock.Now, MaxOpenFiles: 1},
		func(TopicPartition) Config { return DefaultConfig() })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tp := TopicPartition{Topic: "t", Partition: 0}
	cfg := DefaultConfig()
	cfg.SegmentBytes = 8 << 10
	l, err := m.GetOrCreate(tp, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := buildBatch(plainSpec(clock.Now().UnixMilli()), nRecords(3, 2000))
	mustAppend(t, l, b, 0)
	mustAppend(t, l, buildBatch(plainSpec(clock.Now().UnixMilli()), nRecords(1, 3000)), 0) // rolls
	s, err := l.Read(0, 1<<20, l.LogEndOffset(), false)
	if err != nil || s.Size != int32(len(b)) {
		t.Fatalf("read: %+v, %v", s, err)
	}
	others := 0
	evict := func() {
		t.Helper()
		others++
		o, err := m.GetOrCreate(TopicPartition{Topic: "other", Partition: int32(others)}, [16]byte{2}, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, o, buildBatch(plainSpec(clock.Now().UnixMilli()), nRecords(1, 1)), 0)
	}
	evict()
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 3 {
		t.Fatalf("log start offset %d after DeleteRecords, want 3 (the first segment deleted)", l.LogStartOffset())
	}
	evict()
	if got := readAllSlice(t, s); !bytes.Equal(got[12:], b[12:]) {
		t.Fatal("slice of a segment deleted by DeleteRecords reads other bytes")
	}
	s, err = l.Read(l.LogStartOffset(), 1<<20, l.LogEndOffset(), true)
	if err != nil || s.Size == 0 {
		t.Fatalf("read: %+v, %v", s, err)
	}
	want, err := s.ReadInto(nil)
	if err != nil {
		t.Fatal(err)
	}
	evict()
	if err := m.Delete(tp); err != nil {
		t.Fatal(err)
	}
	evict()
	if got := readAllSlice(t, s); !bytes.Equal(got, want) {
		t.Fatal("slice of a deleted partition reads other bytes")
	}
}
