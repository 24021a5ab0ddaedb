package parallel

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestForEach: every index is called exactly once, and calls run
// side by side (the first two each wait until both have started, which
// one goroutine could never do), as replica.Manager.ApplyLeaderAndISR needs to overlap
// the fsyncs of many partitions.
func TestForEach(t *testing.T) {
	const n = 100
	var calls [n]atomic.Int32
	var started sync.WaitGroup
	started.Add(2)
	both := make(chan struct{})
	go func() { started.Wait(); close(both) }()
	var timedOut atomic.Bool
	ForEach(n, 4, func(i int) {
		calls[i].Add(1)
		if i < 2 {
			started.Done()
			select {
			case <-both:
			case <-time.After(30 * time.Second):
				timedOut.Store(true)
			}
		}
	})
	if timedOut.Load() {
		t.Fatal("calls 0 and 1 never ran at the same time")
	}
	for i := range calls {
		if got := calls[i].Load(); got != 1 {
			t.Fatalf("f(%d) called %d times, want 1", i, got)
		}
	}
}
