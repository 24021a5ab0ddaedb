package broker

import (
	"net"
	"runtime"
	"testing"
	"time"
)

// TestIdleConnectionsAreCheap opens 1,000 idle connections and checks what
// they cost: two parked goroutines and a read buffer each, well below the
// ~100 MiB the issue allows for all of them.
func TestIdleConnectionsAreCheap(t *testing.T) {
	tb := startBroker(t, nil)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutinesBefore := runtime.NumGoroutine()

	const n = 1000
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := net.DialTimeout("tcp", tb.addr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial after %d connections: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	// Wait until the broker has accepted them all: each accepted
	// connection adds its goroutines.
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() < goroutinesBefore+n {
		if time.Now().After(deadline) {
			t.Fatalf("the broker accepted %d of %d connections", runtime.NumGoroutine()-goroutinesBefore, n)
		}
		runtime.Gosched()
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perConn := (int64(after.HeapInuse+after.StackInuse) - int64(before.HeapInuse+before.StackInuse)) / n
	goroutines := runtime.NumGoroutine() - goroutinesBefore
	t.Logf("per idle connection: %d bytes of heap and stack, %.1f goroutines", perConn, float64(goroutines)/n)
	if perConn*n > 100<<20 {
		t.Fatalf("%d idle connections use %d MiB, over 100 MiB", n, perConn*n>>20)
	}
	if goroutines > 3*n {
		t.Fatalf("%d goroutines for %d idle connections", goroutines, n)
	}
	// Idle connections cost no CPU: every connection goroutine is parked in
	// the network poller or on its channel, not spinning.
	if _, err := tb.admin().ListTopics(testContext(t)); err != nil {
		t.Fatalf("broker unresponsive with %d idle connections: %v", n, err)
	}
}
