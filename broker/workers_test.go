package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol"
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

// TestPanicWhileWaitingClosesConnection makes a request's wait panic on a
// worker: its connection is closed, as a handler's panic closes it, and
// the broker, its workers among them, goes on answering others.
func TestPanicWhileWaitingClosesConnection(t *testing.T) {
	tb := startBrokerWith(t, nil, func(b *Broker) {
		av := b.handlers[protocol.ApiVersionsKey]
		b.handlers[protocol.ApiVersionsKey] = handler{av.min, av.max, func(ctx context.Context, r *request, kr kmsg.Request) (reply, error) {
			if kr.(*kmsg.ApiVersionsRequest).ClientSoftwareName == "panic-in-wait" {
				return reply{wait: func() kmsg.Response { panic("a test's wait") }}, nil
			}
			return av.fn(ctx, r, kr)
		}}
	})
	c := dialProbe(t, tb.addr)
	req := apiVersionsRequest()
	req.ClientSoftwareName = "panic-in-wait"
	c.send(req)
	if err := c.closedByBroker(30 * time.Second); err != nil {
		t.Fatalf("connection whose wait panicked: %v", err)
	}
	for range 10 {
		dialProbe(t, tb.addr).roundTrip(apiVersionsRequest())
	}
}
