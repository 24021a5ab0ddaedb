package log

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
)

// TestThrottlerTokenBucket drives the throttle with an injected clock: one
// second's worth passes at once, then bytes wait for the refill.
func TestThrottlerTokenBucket(t *testing.T) {
	clock := newManualClock()
	th := newThrottler(1000, clock.Now)
	steps := []struct {
		advance time.Duration
		take    int64
		want    time.Duration
	}{
		{0, 600, 0},
		{0, 400, 0},                        // the burst is used up
		{0, 500, 500 * time.Millisecond},   // 500 bytes of debt at 1000 B/s
		{500 * time.Millisecond, 0, 0},     // the debt is paid
		{10 * time.Second, 1000, 0},        // the bucket holds at most a second
		{0, 1, time.Millisecond},           // so it is empty again
		{0, 2000, 2001 * time.Millisecond}, // a take above the burst waits for all of it
		{0, 0, 2001 * time.Millisecond},    // still in debt
		{2001 * time.Millisecond, 1, time.Millisecond},
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		if got := th.take(s.take); got != s.want {
			t.Fatalf("step %d: take(%d) after %v = %v, want %v", i, s.take, s.advance, got, s.want)
		}
	}
	if d := newThrottler(math.MaxFloat64, clock.Now).take(1 << 40); d != 0 {
		t.Fatalf("unlimited throttle waits %v", d)
	}
}

// TestManagerRunsCleaner runs the Manager's background work with the
// cleaner enabled: a compacted log of many overwrites of few keys shrinks,
// cleaner-offset-checkpoint is written and read back at the next start,
// and a log with cleanup.policy=delete is left alone.
func TestManagerRunsCleaner(t *testing.T) {
	dir := t.TempDir()
	clock := newManualClock()
	compact, plain := compactConfig(), smallConfig()
	configFor := func(tp TopicPartition) Config {
		if tp.Topic == "compacted" {
			return compact
		}
		return plain
	}
	mc := ManagerConfig{Dirs: []string{dir}, Now: clock.Now, Cleaner: CleanerConfig{Enable: true, Threads: 2, Backoff: time.Millisecond}}
	m, err := OpenManager(mc, configFor)
	if err != nil {
		t.Fatal(err)
	}
	ctp, ptp := TopicPartition{"compacted", 0}, TopicPartition{"plain", 0}
	cl, _ := m.GetOrCreate(ctp, [16]byte{}, compact)
	pl, _ := m.GetOrCreate(ptp, [16]byte{}, plain)
	for i := 0; i < 300; i++ {
		r := kv{key: fmt.Sprint("k", i%5), value: fmt.Sprint(i, strings.Repeat("v", 100))}
		appendKVs(t, cl, clock.Now().UnixMilli(), batch.None, r)
		appendKVs(t, pl, clock.Now().UnixMilli(), batch.None, r)
	}
	before, plainBefore := cl.Size(), pl.Size()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(ctx) }()
	testutil.Eventually(t, 30*time.Second, func() error {
		if cl.CleanerCheckpoint() == 0 {
			return fmt.Errorf("not cleaned yet")
		}
		if _, err := os.Stat(filepath.Join(dir, cleanerOffsetCheckpointFile)); err != nil {
			return err
		}
		return nil
	})
	cancel()
	wg.Wait()
	if got := cl.Size(); got >= before/4 {
		t.Fatalf("compacted log %d bytes after cleaning, %d before", got, before)
	}
	if got := pl.Size(); got != plainBefore {
		t.Fatalf("plain log changed from %d to %d bytes", plainBefore, got)
	}
	cp := cl.CleanerCheckpoint()
	got := readAllRecords(t, cl)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, cleanerOffsetCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("0\n1\ncompacted 0 %d\n", cp); string(data) != want {
		t.Fatalf("cleaner-offset-checkpoint:\n%q\nwant\n%q", data, want)
	}
	m2, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Now: clock.Now}, configFor)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if got := m2.Get(ctp).CleanerCheckpoint(); got != cp {
		t.Fatalf("checkpoint after restart %d, want %d", got, cp)
	}
	m2.Get(ctp).SetHighWatermark(m2.Get(ctp).LogEndOffset())
	if after := readAllRecords(t, m2.Get(ctp)); fmt.Sprint(after) != fmt.Sprint(got) {
		t.Fatalf("records changed across restart")
	}
}

// TestSetCleanerConfigStartsCleaner: a Manager started with the cleaner
// disabled cleans once a dynamic change enables it.
func TestSetCleanerConfigStartsCleaner(t *testing.T) {
	clock := newManualClock()
	compact := compactConfig()
	m, err := OpenManager(ManagerConfig{Dirs: []string{t.TempDir()}, Now: clock.Now, Cleaner: CleanerConfig{Threads: 1, Backoff: time.Millisecond}},
		func(TopicPartition) Config { return compact })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, _ := m.GetOrCreate(TopicPartition{"compacted", 0}, [16]byte{}, compact)
	for i := 0; i < 100; i++ {
		appendKVs(t, l, clock.Now().UnixMilli(), batch.None, kv{key: fmt.Sprint("k", i%3), value: strings.Repeat("v", 100)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); m.Run(ctx) }()
	defer func() { cancel(); wg.Wait() }()
	m.SetCleanerConfig(CleanerConfig{Enable: true, Threads: 1, Backoff: time.Millisecond, IOMaxBytesPerSecond: 1 << 30})
	testutil.Eventually(t, 30*time.Second, func() error {
		if l.CleanerCheckpoint() == 0 {
			return fmt.Errorf("not cleaned")
		}
		return nil
	})
}

// TestCleanerMarksCorruptLogUncleanable: a log whose cleaning hits
// corruption is reported and not picked again, so the cleaner does not spin
// on it, while other logs are still cleaned.
func TestCleanerMarksCorruptLogUncleanable(t *testing.T) {
	dir := t.TempDir()
	clock := newManualClock()
	compact := compactConfig()
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Now: clock.Now}, func(TopicPartition) Config { return compact })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	bad, _ := m.GetOrCreate(TopicPartition{"bad", 0}, [16]byte{}, compact)
	good, _ := m.GetOrCreate(TopicPartition{"good", 0}, [16]byte{}, compact)
	for i := 0; i < 60; i++ {
		appendKVs(t, bad, clock.Now().UnixMilli(), batch.None, kv{key: fmt.Sprint("k", i%3), value: strings.Repeat("v", 100)})
	}
	for i := 0; i < 30; i++ {
		appendKVs(t, good, clock.Now().UnixMilli(), batch.None, kv{key: fmt.Sprint("k", i%3), value: strings.Repeat("v", 100)})
	}
	f, err := os.OpenFile(offsetFileName(bad.Dir(), 0, logSuffix), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xee}, batch.HeaderSize+5)
	f.Close()
	offsets := newOffsetMap(1<<20, 0.9)
	ctx := context.Background()
	// Both are fully dirty; the cleaner picks the first by ratio, and map
	// order decides ties, so run until both were tried.
	for i := 0; i < 3; i++ {
		m.cleanFilthiest(ctx, offsets)
	}
	if !m.cleaner.uncleanable[TopicPartition{"bad", 0}] {
		t.Fatal("corrupt log not marked uncleanable")
	}
	if good.CleanerCheckpoint() == 0 {
		t.Fatal("the healthy log was not cleaned")
	}
	if bad.CleanerCheckpoint() != 0 {
		t.Fatalf("corrupt log's checkpoint moved to %d", bad.CleanerCheckpoint())
	}
}
