package log

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenManagerLoadsWithRecoveryThreads: with
// num.recovery.threads.per.data.dir = 4 the logs of a dir open side by
// side (the first two Opens each wait, in the clock they read, until both
// have started, which one thread could never do), and every log loads.
func TestOpenManagerLoadsWithRecoveryThreads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	clock := newManualClock()
	m := openTestManager(t, []string{dir}, clock, DefaultConfig())
	const n = 20
	for i := 0; i < n; i++ {
		if _, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: int32(i)}, [16]byte{}, DefaultConfig()); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	var (
		calls    atomic.Int32
		both     = make(chan struct{})
		once     sync.Once
		timedOut atomic.Bool
	)
	now := func() time.Time {
		switch calls.Add(1) {
		case 1:
		case 2:
			once.Do(func() { close(both) })
		default:
			return clock.Now()
		}
		select {
		case <-both:
		case <-time.After(30 * time.Second):
			timedOut.Store(true)
		}
		return clock.Now()
	}
	m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, BrokerID: 1, ClusterID: "c1", Now: now, RecoveryThreads: 4},
		func(TopicPartition) Config { return DefaultConfig() })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if timedOut.Load() {
		t.Fatal("no two logs were opened at the same time")
	}
	for i := 0; i < n; i++ {
		if m.Get(TopicPartition{Topic: "t", Partition: int32(i)}) == nil {
			t.Fatal(fmt.Sprintf("t-%d was not loaded", i))
		}
	}
}
