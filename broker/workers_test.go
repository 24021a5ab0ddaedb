package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestConnectionReusesWorkers sends requests one at a time on one
// connection, so that each starts the connection's applier and then its
// writer: they must run on parked workers, not on new goroutines (two per
// request before workers, each growing its stack from the start), and the
// parked workers must end with the broker.
func TestConnectionReusesWorkers(t *testing.T) {
	tb := startBroker(t, nil)
	c := dialProbe(t, tb.addr)
	c.roundTrip(apiVersionsRequest())
	w := tb.b.workers
	started := w.started.Load()
	const n = 200
	for range n {
		c.roundTrip(apiVersionsRequest())
	}
	// A worker still between its answer and parking when the next
	// request comes makes the broker start another: a few, not one per
	// request.
	if got := w.started.Load() - started; got > n/20 {
		t.Errorf("%d goroutines started for the appliers and writers of %d requests, want at most %d", got, n, n/20)
	}
	if idle := w.idle.Load(); idle > w.maxIdle {
		t.Errorf("%d workers parked, over %d", idle, w.maxIdle)
	}
	tb.stop()
	testutil.Eventually(t, 30*time.Second, func() error {
		if idle := w.idle.Load(); idle != 0 {
			return fmt.Errorf("%d workers still parked after the broker stopped", idle)
		}
		return nil
	})
}
