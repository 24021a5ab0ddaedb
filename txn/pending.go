package txn

import "context"

// Pending is a request whose step ran and whose answer comes once its
// record is committed or failed: the form of the coordinator's requests
// for a driver that cannot block (the simulation, which polls it after
// every event). The blocking methods wait on it.
type Pending[T any] struct {
	ch chan T
	// timedOut is what Wait answers when its context ends first.
	timedOut T
	result   T
	done     bool
}

func newPending[T any](timedOut T) *Pending[T] {
	return &Pending[T]{ch: make(chan T, 1), timedOut: timedOut}
}

// answered is a Pending answered at once (a coordinator-level error).
func answered[T any](r T) *Pending[T] {
	return &Pending[T]{result: r, done: true}
}

// answer is the step's reply; it runs once, within the step or the
// append's completion, and never blocks: the channel has room for it.
func (p *Pending[T]) answer(r T) { p.ch <- r }

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

// Wait returns the answer, or REQUEST_TIMED_OUT if ctx ends first (the
// step still completes; only the answer is lost).
func (p *Pending[T]) Wait(ctx context.Context) T {
	if p.done {
		return p.result
	}
	select {
	case r := <-p.ch:
		p.result, p.done = r, true
		return r
	case <-ctx.Done():
		return p.timedOut
	}
}
