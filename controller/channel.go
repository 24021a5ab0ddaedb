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
// reach a live broker (Kafka retries until the broker leaves, too).
const SendRetryBackoff = 100 * time.Millisecond

type queued struct {
	req    kmsg.Request
	onDone func(kmsg.Response, error) // may be nil; must not block
}

// requestQueue is one broker's control requests in order, the head resent
// until it is answered, like Kafka's RequestSendThread. It is pure: its
// driver sends the head (next), reports how that ended (answered), and
// waits SendRetryBackoff before the next after a failure. Its queue is
// unbounded for the same reason Kafka's is: the controller must not drop
// or block on control messages; it holds at most a few requests per
// controller event.
type requestQueue struct {
	queue []queued
	// inFlight: the head was handed out by next and has not been answered;
	// backingOff: its send failed and the driver's backoff is not over.
	inFlight, backingOff bool
}

func (q *requestQueue) push(req kmsg.Request, onDone func(kmsg.Response, error)) {
	q.queue = append(q.queue, queued{req, onDone})
}

// next returns the request to send now: the head, unless it is in flight
// already, backing off, or the queue is empty.
func (q *requestQueue) next() (kmsg.Request, bool) {
	if q.inFlight || q.backingOff || len(q.queue) == 0 {
		return nil, false
	}
	q.inFlight = true
	return q.queue[0].req, true
}

// answered ends the head's send. On success the head leaves the queue and
// its callback is returned (nil if it has none); on failure it stays, to
// be handed out again by next once the driver's backoff is over (retry).
func (q *requestQueue) answered(err error) func(kmsg.Response, error) {
	q.inFlight = false
	if err != nil {
		q.backingOff = true
		return nil
	}
	done := q.queue[0].onDone
	q.queue = q.queue[1:]
	return done
}

// retry ends the backoff after a failed send.
func (q *requestQueue) retry() { q.backingOff = false }

// brokerChannel is a broker's requestQueue and its driver: a goroutine of
// its own (goroutineChannel), so that a slow or dead broker never stalls
// the event loop, or the Env of a stepped controller (envChannel).
type brokerChannel interface {
	enqueue(req kmsg.Request, onDone func(kmsg.Response, error))
	// stop drops the queued requests; no callback runs after it returns.
	stop()
}

// newChannel starts the channel to broker id for this term.
func (c *Controller) newChannel(ctx context.Context, id int32) brokerChannel {
	if c.env != nil {
		return &envChannel{id: id, env: c.env, log: c.log}
	}
	return startGoroutineChannel(ctx, id, c.sender, c.log)
}

// goroutineChannel sends one broker's requests on its own goroutine.
type goroutineChannel struct {
	id     int32
	sender Sender
	log    *slog.Logger

	mu     sync.Mutex // guards q
	q      requestQueue
	wake   chan struct{} // cap 1
	cancel context.CancelFunc
	done   chan struct{}
}

func startGoroutineChannel(ctx context.Context, id int32, sender Sender, log *slog.Logger) *goroutineChannel {
	ctx, cancel := context.WithCancel(ctx)
	bc := &goroutineChannel{id: id, sender: sender, log: log, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go bc.run(ctx)
	return bc
}

func (bc *goroutineChannel) enqueue(req kmsg.Request, onDone func(kmsg.Response, error)) {
	bc.mu.Lock()
	bc.q.push(req, onDone)
	bc.mu.Unlock()
	select {
	case bc.wake <- struct{}{}:
	default:
	}
}

// stop ends the goroutine and waits for it; queued requests are dropped.
func (bc *goroutineChannel) stop() {
	bc.cancel()
	<-bc.done
}

func (bc *goroutineChannel) run(ctx context.Context) {
	defer close(bc.done)
	for {
		bc.mu.Lock()
		req, ok := bc.q.next()
		bc.mu.Unlock()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-bc.wake:
				continue
			}
		}
		resp, err := bc.sender.Send(ctx, bc.id, req)
		if err != nil && ctx.Err() != nil {
			return
		}
		bc.mu.Lock()
		onDone := bc.q.answered(err)
		bc.mu.Unlock()
		if err == nil {
			if onDone != nil {
				onDone(resp, nil)
			}
			continue
		}
		bc.log.Warn("controller request to broker failed; retrying", "broker", bc.id, "key", req.Key(), "err", err)
		t := time.NewTimer(SendRetryBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		bc.mu.Lock()
		bc.q.retry()
		bc.mu.Unlock()
	}
}

// envChannel drives a broker's requestQueue through a stepped
// controller's Env: the sends, their answers and the retry backoff are
// the Env's events. Everything runs on the Env's one goroutine.
type envChannel struct {
	id      int32
	env     Env
	log     *slog.Logger
	q       requestQueue
	stopped bool
}

func (ch *envChannel) enqueue(req kmsg.Request, onDone func(kmsg.Response, error)) {
	ch.q.push(req, onDone)
	ch.send()
}

func (ch *envChannel) stop() { ch.stopped = true }

func (ch *envChannel) send() {
	if ch.stopped {
		return
	}
	req, ok := ch.q.next()
	if !ok {
		return
	}
	ch.env.Send(ch.id, req, func(resp kmsg.Response, err error) {
		if ch.stopped {
			return
		}
		onDone := ch.q.answered(err)
		if err != nil {
			ch.log.Warn("controller request to broker failed; retrying", "broker", ch.id, "key", req.Key(), "err", err)
			ch.env.After(SendRetryBackoff, func() {
				ch.q.retry()
				ch.send()
			})
			return
		}
		if onDone != nil {
			onDone(resp, nil)
		}
		ch.send()
	})
}
