// Package pending holds the answer to a request that a coordinator's step
// accepted and a later step gives: the group and transaction coordinators'
// requests, for a driver that cannot block (the simulation polls after
// every event) and for the handlers, which wait.
package pending

import "context"

// Pending is one request's answer. It is answered once, by Answer or
// through Reply, which never blocks: the channel has room for the answer.
type Pending[T any] struct {
	ch chan T
	// cancelled is what Wait answers when its context ends first; the
	// step still completes, only its answer is lost.
	cancelled T
	result    T
	done      bool
}

// New is a Pending waiting for its answer.
func New[T any](cancelled T) *Pending[T] {
	return &Pending[T]{ch: make(chan T, 1), cancelled: cancelled}
}

// Answered is a Pending answered at once (an error found before the step).
func Answered[T any](r T) *Pending[T] {
	return &Pending[T]{result: r, done: true}
}

// Reply is where the step sends the answer.
func (p *Pending[T]) Reply() chan<- T { return p.ch }

// Answer gives the answer.
func (p *Pending[T]) Answer(r T) { p.ch <- r }

// Poll returns the answer and true once there is one.
func (p *Pending[T]) Poll() (T, bool) {
	if !p.done {
		select {
		case r := <-p.ch:
			p.result, p.done = r, true
		default:
		}
	}
	return p.result, p.done
}

// Wait returns the answer, or the cancelled answer if ctx ends first.
func (p *Pending[T]) Wait(ctx context.Context) T {
	if p.done {
		return p.result
	}
	select {
	case r := <-p.ch:
		p.result, p.done = r, true
		return r
	case <-ctx.Done():
		return p.cancelled
	}
}
