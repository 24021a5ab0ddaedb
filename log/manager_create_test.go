package log

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestGetOrCreateOpensOutsideTheLock: while one partition's new log is
// being created (its files made and fsynced), the Manager serves other
// partitions, and a second GetOrCreate for the same partition waits for
// the first and gets the same log. The creation is held inside Open by
// the clock it reads.
func TestGetOrCreateOpensOutsideTheLock(t *testing.T) {
	clock := newManualClock()
	var (
		gateMu  sync.Mutex
		armed   bool
		entered = make(chan struct{})
		release = make(chan struct{})
	)
	now := func() time.Time {
		gateMu.Lock()
		block := armed
		armed = false
		gateMu.Unlock()
		if block {
			close(entered)
			<-release
		}
		return clock.Now()
	}
	m, err := OpenManager(ManagerConfig{Dirs: []string{filepath.Join(t.TempDir(), "d")}, BrokerID: 1, ClusterID: "c1", Now: now},
		func(TopicPartition) Config { return DefaultConfig() })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	a, b := TopicPartition{Topic: "t", Partition: 0}, TopicPartition{Topic: "t", Partition: 1}

	gateMu.Lock()
	armed = true
	gateMu.Unlock()
	type result struct {
		l   *Log
		err error
	}
	first := make(chan result, 1)
	go func() {
		l, err := m.GetOrCreate(a, [16]byte{}, DefaultConfig())
		first <- result{l, err}
	}()
	<-entered // a's Open is blocked on the clock

	other := make(chan result, 1)
	go func() {
		l, err := m.GetOrCreate(b, [16]byte{}, DefaultConfig())
		other <- result{l, err}
	}()
	second := make(chan result, 1)
	go func() {
		l, err := m.GetOrCreate(a, [16]byte{}, DefaultConfig())
		second <- result{l, err}
	}()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	select {
	case r := <-other:
		if r.err != nil || r.l == nil {
			t.Fatalf("GetOrCreate(%v) while %v is created: %v", b, a, r.err)
		}
	case <-deadline.C:
		close(release)
		t.Fatalf("GetOrCreate(%v) waited for the creation of %v", b, a)
	}
	select {
	case r := <-second:
		t.Fatalf("a second GetOrCreate(%v) returned (%v, %v) before the first created it", a, r.l, r.err)
	default:
	}
	if m.Get(a) != nil {
		t.Fatalf("Get(%v) found the log before its creation finished", a)
	}
	close(release)
	r1, r2 := <-first, <-second
	if r1.err != nil || r2.err != nil || r1.l == nil || r1.l != r2.l {
		t.Fatalf("GetOrCreate(%v) twice: (%p, %v) and (%p, %v), want one log", a, r1.l, r1.err, r2.l, r2.err)
	}
	if m.Get(a) != r1.l {
		t.Fatalf("Get(%v) is not the created log", a)
	}
}
