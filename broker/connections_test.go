package broker

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// idleConnectionHeap bounds the heap one idle connection costs, both ends
// counted (the test's client is in the same process): its conn and
// channels, two sockets. A read buffer (16 KiB) per connection is over it.
// Stacks are not bounded: the size a goroutine's stack starts at follows
// the process's other goroutines (and doubles under -race); the count of
// goroutines is.
const idleConnectionHeap = 8 << 10

// TestIdleConnectionsAreCheap opens 500 connections that each send a
// request, read the answer and go idle, and checks what they cost then:
// one parked goroutine each and no read or write buffer, under
// idleConnectionHeap per connection.
func TestIdleConnectionsAreCheap(t *testing.T) {
	tb := startBroker(t, nil)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutinesBefore := runtime.NumGoroutine()

	const n = 500
	conns := make([]*probeConn, 0, n)
	for range n {
		c := dialProbe(t, tb.addr)
		// A request answered: the reader has buffered, the writer has
		// written; neither may keep what it used.
		c.roundTrip(apiVersionsRequest())
		conns = append(conns, c)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if open := tb.b.quotas.open(); open < n {
			return fmt.Errorf("the broker serves %d of %d connections", open, n)
		}
		return nil
	})
	// A writer may still be ending after its answer was read. The
	// broker's own goroutines (timers, the metadata loop) come and go: a
	// little slack, far below one more per connection. Parked workers
	// (workers.go) are the broker's, at most maxIdle of them, whatever
	// the number of connections: not counted.
	testutil.Eventually(t, 30*time.Second, func() error {
		if g := runtime.NumGoroutine() - goroutinesBefore - int(tb.b.workers.idle.Load()); g > n+n/20 {
			return fmt.Errorf("%d goroutines for %d idle connections, want one each", g, n)
		}
		return nil
	})
	if idle := tb.b.workers.idle.Load(); idle > tb.b.workers.maxIdle {
		t.Errorf("%d workers parked, over %d", idle, tb.b.workers.maxIdle)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	heap := int64(after.HeapInuse) - int64(before.HeapInuse)
	stack := int64(after.StackInuse) - int64(before.StackInuse)
	t.Logf("per idle connection: %d bytes of heap, %d of stack, %.2f goroutines (%d parked workers besides)", heap/n, stack/n,
		float64(runtime.NumGoroutine()-goroutinesBefore-int(tb.b.workers.idle.Load()))/n, tb.b.workers.idle.Load())
	if heap/n > idleConnectionHeap {
		t.Errorf("an idle connection costs %d bytes of heap, over %d", heap/n, idleConnectionHeap)
	}
	// Every idle connection still answers, and the broker too.
	for _, c := range conns {
		c.roundTrip(apiVersionsRequest())
	}
	if _, err := tb.admin().ListTopics(testContext(t)); err != nil {
		t.Fatalf("broker unresponsive with %d idle connections: %v", n, err)
	}
}

// TestFrameInPieces sends requests a few bytes at a time, so that the
// bytes an idle reader reads without a buffer are a part of the size
// prefix, all of it, or more: each must reach the buffered reader in
// order.
func TestFrameInPieces(t *testing.T) {
	tb := startBroker(t, nil)
	c := dialProbe(t, tb.addr)
	req := apiVersionsRequest()
	for _, pieces := range [][]int{{1, 1, 1, 1}, {3, 2}, {4}, {5, 1}, {2, 7}} {
		c.corr++
		wire := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, c.corr)
		for _, n := range pieces {
			if _, err := c.c.Write(wire[:n]); err != nil {
				t.Fatalf("write: %v", err)
			}
			wire = wire[n:]
			// Give the broker the time to read the piece on its own; a
			// piece read together with the next one is correct too.
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := c.c.Write(wire); err != nil {
			t.Fatalf("write: %v", err)
		}
		resp, err := c.recv(req, 30*time.Second)
		if err != nil {
			t.Fatalf("pieces %v: %v", pieces, err)
		}
		if code := resp.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
			t.Fatalf("pieces %v: error %d", pieces, code)
		}
	}
}
