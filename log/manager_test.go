package log

import (
	"context"
	"errors"
	"github.com/brook-mq/brook/internal/testutil"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func openTestManager(t *testing.T, dirs []string, clock *testutil.Clock, cfg Config) *Manager {
	t.Helper()
	m, err := OpenManager(ManagerConfig{Dirs: dirs, BrokerID: 1, ClusterID: "c1", Now: clock.Now},
		func(TopicPartition) Config { return cfg })
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestManagerLifecycle(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	clock := newManualClock()
	cfg := smallConfig()
	m := openTestManager(t, dirs, clock, cfg)
	id := [16]byte{9}
	logs := map[TopicPartition]*Log{}
	for p := int32(0); p < 4; p++ {
		tp := TopicPartition{"orders", p}
		l, err := m.GetOrCreate(tp, id, cfg)
		if err != nil {
			t.Fatal(err)
		}
		logs[tp] = l
		for i := 0; i < 30; i++ {
			mustAppend(t, l, buildBatch(plainSpec(1), nRecords(2, 200)), 0)
		}
		l.SetHighWatermark(l.LogEndOffset() - int64(p))
	}
	// Spread over both dirs.
	count := map[string]int{}
	for _, l := range logs {
		count[filepath.Dir(l.Dir())]++
	}
	if count[dirs[0]] != 2 || count[dirs[1]] != 2 {
		t.Fatalf("partitions per dir: %v", count)
	}
	if _, err := m.GetOrCreate(TopicPartition{"orders", 0}, [16]byte{8}, cfg); !errors.Is(err, ErrInconsistentTopicID) {
		t.Fatalf("other topic id accepted: %v", err)
	}
	if _, err := logs[TopicPartition{"orders", 1}].DeleteRecordsBefore(5); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		// Kafka 3.9 (ZooKeeper mode) writes this JSON, and a KRaft
		// broker parses it for its broker epoch.
		if b, err := os.ReadFile(filepath.Join(d, cleanShutdownFile)); err != nil || string(b) != `{"version":0,"brokerEpoch":-1}` {
			t.Fatalf("clean shutdown marker in %s: %q %v", d, b, err)
		}
		meta, _ := os.ReadFile(filepath.Join(d, metaPropertiesFile))
		if !strings.Contains(string(meta), "broker.id=1\n") || !strings.Contains(string(meta), "cluster.id=c1\n") || !strings.Contains(string(meta), "version=0\n") {
			t.Fatalf("meta.properties: %q", meta)
		}
	}
	m = openTestManager(t, dirs, clock, cfg)
	defer m.Close()
	if got := len(m.All()); got != 4 {
		t.Fatalf("reopened %d logs", got)
	}
	for tp, old := range logs {
		l := m.Get(tp)
		if l.LogEndOffset() != 60 || l.HighWatermark() != 60-int64(tp.Partition) || l.TopicID() != id || l.RecoveryPoint() != 60 {
			t.Fatalf("%s: LEO %d HW %d rp %d", tp, l.LogEndOffset(), l.HighWatermark(), l.RecoveryPoint())
		}
		if l.Dir() != old.Dir() {
			t.Fatalf("%s moved dirs", tp)
		}
	}
	if ls := m.Get(TopicPartition{"orders", 1}).LogStartOffset(); ls != 5 {
		t.Fatalf("log start offset %d not restored from checkpoint", ls)
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, cleanShutdownFile)); !os.IsNotExist(err) {
			t.Fatalf("clean shutdown marker survived startup in %s", d)
		}
	}
}

func TestManagerDirLock(t *testing.T) {
	dir := t.TempDir()
	clock := newManualClock()
	m := openTestManager(t, []string{dir}, clock, DefaultConfig())
	_, err := OpenManager(ManagerConfig{Dirs: []string{dir}, BrokerID: 1, Now: clock.Now}, func(TopicPartition) Config { return DefaultConfig() })
	if !errors.Is(err, ErrDirLocked) {
		t.Fatalf("second manager on a locked dir: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := openTestManager(t, []string{dir}, clock, DefaultConfig())
	m2.Close()
}

func TestStoredBrokerID(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if _, found, err := StoredBrokerID(nil, []string{a, b}); found || err != nil {
		t.Fatalf("empty dirs: found %v, %v", found, err)
	}
	os.WriteFile(filepath.Join(b, metaPropertiesFile), encodeMetaProperties(metaProperties{BrokerID: 1007, ClusterID: "c"}), 0o644)
	if id, found, err := StoredBrokerID(nil, []string{a, b}); !found || id != 1007 || err != nil {
		t.Fatalf("got %d, %v, %v", id, found, err)
	}
	os.WriteFile(filepath.Join(a, metaPropertiesFile), encodeMetaProperties(metaProperties{BrokerID: 1008, ClusterID: "c"}), 0o644)
	if _, _, err := StoredBrokerID(nil, []string{a, b}); !errors.Is(err, ErrInconsistentMeta) {
		t.Fatalf("disagreeing dirs: %v", err)
	}
}

func TestManagerMetaMismatch(t *testing.T) {
	dir := t.TempDir()
	clock := newManualClock()
	m := openTestManager(t, []string{dir}, clock, DefaultConfig())
	m.Close()
	for _, mc := range []ManagerConfig{
		{Dirs: []string{dir}, BrokerID: 2, ClusterID: "c1", Now: clock.Now},
		{Dirs: []string{dir}, BrokerID: 1, ClusterID: "other", Now: clock.Now},
	} {
		if _, err := OpenManager(mc, func(TopicPartition) Config { return DefaultConfig() }); !errors.Is(err, ErrInconsistentMeta) {
			t.Fatalf("%+v: err %v", mc, err)
		}
	}
}

func TestManagerDelete(t *testing.T) {
	dir := t.TempDir()
	clock := newManualClock()
	cfg := DefaultConfig()
	cfg.FileDeleteDelayMs = 1000
	m := openTestManager(t, []string{dir}, clock, cfg)
	defer m.Close()
	tp := TopicPartition{"gone", 0}
	l, err := m.GetOrCreate(tp, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, buildBatch(plainSpec(1), nRecords(2, 10)), 0)
	s, err := l.Read(0, 1000, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(tp); err != nil {
		t.Fatal(err)
	}
	if m.Get(tp) != nil {
		t.Fatal("deleted log still listed")
	}
	if _, err := l.Append(buildBatch(plainSpec(1), nRecords(1, 1)), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("append to deleted log: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	var renamed string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "gone-0.") && strings.HasSuffix(e.Name(), "-delete") {
			renamed = e.Name()
		}
	}
	if renamed == "" || len(renamed) != len("gone-0.")+32+len("-delete") {
		t.Fatalf("no <tp>.<uuid>-delete dir: %v", ents)
	}
	m.runDeletions()
	if _, err := s.ReadInto(nil); err != nil {
		t.Fatalf("slice unreadable before file.delete.delay.ms: %v", err)
	}
	clock.Advance(time.Second)
	m.runDeletions()
	if _, err := os.Stat(filepath.Join(dir, renamed)); !os.IsNotExist(err) {
		t.Fatalf("deleted partition dir still there: %v", err)
	}
	// Re-creating the topic gets a fresh log.
	l2, err := m.GetOrCreate(tp, [16]byte{2}, cfg)
	if err != nil || l2.LogEndOffset() != 0 {
		t.Fatalf("recreate: %v", err)
	}
}

func TestManagerRemovesDeleteDirsAndRunStops(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "x-0.0123456789abcdef0123456789abcdef-delete")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(stale, "00000000000000000000.log"), []byte("x"), 0o644)
	clock := newManualClock()
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Now: clock.Now, RetentionCheckInterval: time.Millisecond,
		FlushCheckInterval: time.Millisecond, DeleteCheckInterval: time.Millisecond, FlushOffsetCheckpointInterval: time.Millisecond,
		FlushStartOffsetCheckpointInterval: time.Millisecond, HighWatermarkCheckpointInterval: time.Millisecond},
		func(TopicPartition) Config { return DefaultConfig() })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err1 := os.Stat(stale)
		_, err2 := os.Stat(filepath.Join(dir, highWatermarkCheckpointFile))
		if os.IsNotExist(err1) && err2 == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stale dir not removed or checkpoints not written: %v, %v", err1, err2)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	wg.Wait()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestManagerRecoversAfterCrash(t *testing.T) {
	dir := t.TempDir()
	clock := newManualClock()
	cfg := smallConfig()
	m := openTestManager(t, []string{dir}, clock, cfg)
	tp := TopicPartition{"t", 0}
	l, _ := m.GetOrCreate(tp, [16]byte{}, cfg)
	for i := 0; i < 50; i++ {
		mustAppend(t, l, buildBatch(plainSpec(1), nRecords(2, 300)), 0)
	}
	if err := m.writeCheckpoints(); err != nil {
		t.Fatal(err)
	}
	crash(l)
	m.unlock() // the crashed process's flock dies with it
	// Torn tail: half a batch header.
	l.mu.RLock()
	last := offsetFileName(l.Dir(), l.active().baseOffset, logSuffix)
	intact := l.active().size
	l.mu.RUnlock()
	f, _ := os.OpenFile(last, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(make([]byte, 30))
	f.Close()
	m2 := openTestManager(t, []string{dir}, clock, cfg)
	defer m2.Close()
	if got := m2.Get(tp).LogEndOffset(); got != 100 {
		t.Fatalf("LEO %d after crash recovery", got)
	}
	if st, err := os.Stat(last); err != nil || st.Size() != intact {
		t.Fatalf("torn tail not cut: size %d, want %d (%v)", st.Size(), intact, err)
	}
}
