package broker

import "context"

// requestQueue bounds the requests read from the network and not yet taken
// by a handler, over all connections: queued.max.requests, Kafka's request
// channel. A reader that finds it full stops reading (and so, through TCP,
// slows its client) until a handler takes a request; nothing is dropped.
type requestQueue struct {
	places chan struct{}
}

func newRequestQueue(size int32) *requestQueue {
	return &requestQueue{places: make(chan struct{}, max(size, 1))}
}

// enqueue takes a place for one request, waiting while the queue is full;
// it fails only when ctx ends.
func (q *requestQueue) enqueue(ctx context.Context) error {
	select {
	case q.places <- struct{}{}:
		return nil
	default:
	}
	select {
	case q.places <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dequeue gives a place back as a handler takes its request.
func (q *requestQueue) dequeue() { <-q.places }
