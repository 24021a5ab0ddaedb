package broker

import (
	"runtime"
	"sync/atomic"
)

// A connection's applier and writer run only while it has work (an idle
// connection is one parked goroutine, its reader), so they start again for
// nearly every request of a producer that waits for each answer; and a
// request whose answer waits (a consumer's long poll, acks=all) waits on a
// goroutine of its own. A new goroutine starts with a small stack and
// grows it down the request's path (a produce goes about 9 KiB deep, to the
// batch's validation), copying the whole stack at each doubling: 6% of the
// broker's CPU under a 100-byte produce, on top of creating the goroutine.
// Workers are the goroutines of finished jobs kept parked, with the stacks
// they grew, for the next job; an idle connection still holds none of them.

// workerJob is a connection's job to run: the applier, the writer, or
// the wait of a request whose answer waits.
type workerJob struct {
	c *conn
	// wait is the pending answer whose wait to run; when nil, write picks
	// the writer over the applier.
	wait  *pending
	write bool
}

func (j workerJob) run() {
	switch {
	case j.wait != nil:
		j.c.awaitReply(j.wait)
	case j.write:
		j.c.writeLoop()
	default:
		defer j.c.appliers.Done()
		j.c.applyLoop(j.c.ctx, j.c.cancel, false)
	}
}

// workers hands jobs to parked goroutines, or to new ones when none is
// parked. At most maxIdle are kept parked; the others end after their job.
type workers struct {
	// jobs is unbuffered: a send succeeds only into a parked worker, so a
	// job never waits behind another.
	jobs    chan workerJob
	idle    atomic.Int32
	maxIdle int32
	// handed counts the jobs started, started the goroutines started for
	// jobs no parked worker took.
	handed, started atomic.Int64
	// stop is closed once the broker has stopped serving: parked workers
	// end.
	stop chan struct{}
}

// workersPerProc is how many parked workers the broker keeps per
// GOMAXPROCS: a job that ends and the next one starting a moment later on
// another connection find each other, while a burst over many connections
// leaves at most this many stacks parked (8-32 KiB each, halved by each GC
// cycle while they stay parked).
const workersPerProc = 4

func newWorkers() *workers {
	return &workers{
		jobs:    make(chan workerJob),
		maxIdle: int32(workersPerProc * runtime.GOMAXPROCS(0)),
		stop:    make(chan struct{}),
	}
}

// start runs j on a parked worker, or on a new goroutine. It never blocks.
func (w *workers) start(j workerJob) {
	w.handed.Add(1)
	select {
	case w.jobs <- j:
	default:
		w.started.Add(1)
		go w.work(j)
	}
}

// work runs j, then parks for the next job unless maxIdle workers are
// parked already or the broker stopped.
func (w *workers) work(j workerJob) {
	for {
		j.run()
		if !w.reserveIdle() {
			return
		}
		select {
		case j = <-w.jobs:
			w.idle.Add(-1)
		case <-w.stop:
			w.idle.Add(-1)
			return
		}
	}
}

// reserveIdle takes a parking place, or reports that maxIdle workers are
// parked. A compare-and-swap, not an Add undone when over: idle never
// passes maxIdle, not even for an instant, so that it can be asserted.
func (w *workers) reserveIdle() bool {
	for {
		n := w.idle.Load()
		if n >= w.maxIdle {
			return false
		}
		if w.idle.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// close ends the parked workers and every worker when its job ends; jobs
// may not be started after.
func (w *workers) close() { close(w.stop) }
