// Package parallel runs independent pieces of work on a bounded number of
// goroutines: the per-partition steps that wait on the disk (creating,
// loading and closing logs) overlap their fsyncs instead of queueing.
package parallel

import (
	"sync"
	"sync/atomic"
)

// ForEach calls f(0..n-1) on at most workers goroutines and returns once
// every call has. With workers <= 1 it calls them in order on the caller's
// goroutine.
func ForEach(n, workers int, f func(i int)) {
	if n <= 1 || workers <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}
