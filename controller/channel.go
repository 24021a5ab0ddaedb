package controller

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sender is how the controller talks to brokers: in-process for its own
// broker, over the inter-broker listener for the others. Requests are
// *kmsg.LeaderAndISRRequest, *kmsg.UpdateMetadataRequest and
// *kmsg.StopReplicaRequest.
type Sender interface {
	Send(ctx context.Context, brokerID int32, req kmsg.Request) (kmsg.Response, error)
}

// SendRetryBackoff is the pause before resending a request that failed to
// reach a live broker (Kafka retries until the broker leaves, too);
// exported for the simulation's controller driver, sim/.
const SendRetryBackoff = 100 * time.Millisecond

type queued struct {
	req    kmsg.Request
	onDone func(kmsg.Response, error) // may be nil; must not block
}

// brokerChannel sends one broker's requests in order on its own goroutine,
// like Kafka's RequestSendThread, so that a slow or dead broker never stalls
// the event loop. Its queue is unbounded for the same reason Kafka's is: the
// controller must not drop or block on control messages; the queue holds at
// most a few requests per controller event.
type brokerChannel struct {
	id     int32
	sender Sender
	log    *slog.Logger

	mu     sync.Mutex
	queue  []queued
	wake   chan struct{} // cap 1
	cancel context.CancelFunc
	done   chan struct{}
}

func startBrokerChannel(ctx context.Context, id int32, sender Sender, log *slog.Logger) *brokerChannel {
	ctx, cancel := context.WithCancel(ctx)
	bc := &brokerChannel{id: id, sender: sender, log: log, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go bc.run(ctx)
	return bc
}

func (bc *brokerChannel) enqueue(req kmsg.Request, onDone func(kmsg.Response, error)) {
	bc.mu.Lock()
	bc.queue = append(bc.queue, queued{req, onDone})
	bc.mu.Unlock()
	select {
	case bc.wake <- struct{}{}:
	default:
	}
}

// stop ends the goroutine and waits for it; queued requests are dropped.
func (bc *brokerChannel) stop() {
	bc.cancel()
	<-bc.done
}

func (bc *brokerChannel) run(ctx context.Context) {
	defer close(bc.done)
	for {
		bc.mu.Lock()
		var next *queued
		if len(bc.queue) > 0 {
			q := bc.queue[0]
			bc.queue = bc.queue[1:]
			next = &q
		}
		bc.mu.Unlock()
		if next == nil {
			select {
			case <-ctx.Done():
				return
			case <-bc.wake:
				continue
			}
		}
		for {
			resp, err := bc.sender.Send(ctx, bc.id, next.req)
			if err == nil {
				if next.onDone != nil {
					next.onDone(resp, nil)
				}
				break
			}
			if ctx.Err() != nil {
				return
			}
			bc.log.Warn("controller request to broker failed; retrying", "broker", bc.id, "key", next.req.Key(), "err", err)
			t := time.NewTimer(SendRetryBackoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}
