package broker

import (
	"context"
	"sync"
)

// requestQueue bounds the requests read from the network and not yet taken
// by a handler, over all connections: queued.max.requests places, Kafka's
// request channel, and queued.max.request.bytes of their frames, Kafka's
// memory pool. A reader that finds it full stops reading (and so, through
// TCP, slows its client) until a handler takes a request; nothing is
// dropped.
type requestQueue struct {
	places chan struct{}
	// maxBytes is queued.max.request.bytes; 0 or less: no bound.
	maxBytes int64

	mu    sync.Mutex
	bytes int64
	// freed is closed and replaced when bytes go down.
	freed chan struct{}
}

func newRequestQueue(size int32, maxBytes int64) *requestQueue {
	return &requestQueue{places: make(chan struct{}, max(size, 1)), maxBytes: maxBytes, freed: make(chan struct{})}
}

// enqueue takes a place for one request of size bytes, waiting while the
// queue is full; it fails only when ctx ends. As Kafka's memory pool, it
// lends bytes while any are left, so one request may take the queue past
// maxBytes (config validation keeps maxBytes at least
// socket.request.max.bytes).
func (q *requestQueue) enqueue(ctx context.Context, size int64) error {
	select {
	case q.places <- struct{}{}:
	default:
		select {
		case q.places <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if q.maxBytes <= 0 {
		return nil
	}
	for {
		q.mu.Lock()
		if q.bytes < q.maxBytes {
			q.bytes += size
			q.mu.Unlock()
			return nil
		}
		freed := q.freed
		q.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			<-q.places
			return ctx.Err()
		}
	}
}

// dequeue gives back the place and bytes of a request of size bytes, as a
// handler takes it or it is discarded.
func (q *requestQueue) dequeue(size int64) {
	<-q.places
	if q.maxBytes <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.bytes -= size
	close(q.freed)
	q.freed = make(chan struct{})
}

// queued reports the requests and bytes in the queue now.
func (q *requestQueue) queued() (requests int, bytes int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.places), q.bytes
}
