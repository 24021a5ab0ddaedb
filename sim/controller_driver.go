package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/controller/store"
)

// Each broker runs the real controller.Controller, stepped
// (controller/step.go): this file is its driver, what election.go's Run
// and the Controller's goroutines are in production. Its watches become
// scheduler events, its requests go over the simulated network (their
// answers, or a timeout, are events), its timers are on the virtual clock,
// and its store is the broker's ZooKeeper session, where a call on a lost
// connection waits, resent every zkResend, as zkstore's does (ctrlRunner).

// watchHook is a one-shot store watch to turn into an event.
type watchHook struct {
	name string
	ch   <-chan store.Event
	ev   store.Event
	fn   func(store.Event)
}

// watch turns a watch of broker b's current session into an event that
// runs only while the incarnation and the session are the same.
func (b *Broker) watch(name string, ch <-chan store.Event, fn func(store.Event)) {
	inc, sess := b.incarnation, b.sess
	b.c.watches = append(b.c.watches, watchHook{name: fmt.Sprintf("%s@%d", name, b.id), ch: ch, fn: func(ev store.Event) {
		if b.live(inc) && b.sess == sess {
			fn(ev)
		}
	}})
}

// zkResend is how often a call on a lost connection is sent again.
const zkResend = 100 * time.Millisecond

// simController is one broker session's controller and its driver: it
// stands for election, runs the terms it wins, and stands again.
type simController struct {
	b    *Broker
	inc  int
	sess *ZKSession
	c    *controller.Controller
	run  *ctrlRunner
	// stepQueued: a Step is scheduled (Wake).
	stepQueued bool
}

// standForController starts the controller of broker b's registered
// session; it stands for election until the session or the broker ends.
func (b *Broker) standForController(inc int) {
	if !b.live(inc) || !b.registered || b.ctrl != nil {
		return
	}
	d := &simController{b: b, inc: inc, sess: b.sess}
	d.run = newCtrlRunner(b.c.sched, b.id)
	d.c = controller.NewStepped(controller.Config{
		BrokerID: b.id, DeleteTopicEnable: true, InterBrokerListener: "PLAINTEXT",
		Logger: slog.New(traceHandler{b}), Now: b.c.sched.Now, Faults: b.c.controllerFaults(),
		CachedStates: b.cachedStates,
	}, blockingStore{d.sess, d.run}, d)
	b.ctrl = d
	d.elect()
}

// controllerFaults are the run's controller faults, with the driver bug
// of ShutdownWritesLost.
func (c *Cluster) controllerFaults() controller.Faults {
	f := c.cfg.ControllerFaults
	f.ControlledShutdownNotPerformed = f.ControlledShutdownNotPerformed || c.cfg.ShutdownWritesLost
	return f
}

func (d *simController) alive() bool {
	return !d.run.dead && d.b.live(d.inc) && d.b.sess == d.sess
}

// elect is Run's election: stand, and when lost wait for /controller to go.
func (d *simController) elect() {
	d.run.do(func() {
		if !d.alive() {
			return
		}
		won, ch, err := d.c.TryElect(context.Background())
		switch {
		case err != nil:
			d.after(controller.FailureBackoff, "stand again", d.elect)
		case !won:
			d.b.watch("controller", ch, func(store.Event) { d.elect() })
		default: // the controller's log says so in the trace
			if err := d.c.StartTerm(context.Background()); err != nil {
				d.endTerm(err)
			}
		}
	})
}

// step runs the loop's Step while a term lasts.
func (d *simController) step() {
	d.run.do(func() {
		if !d.alive() || !d.c.IsActive() {
			return
		}
		if err := d.c.Step(context.Background()); err != nil {
			d.endTerm(err)
		}
	})
}

// endTerm is the end of Run's runActive: resign, then stand again at once
// when another controller took over, after FailureBackoff otherwise; an
// ended session stands no more (the broker's next session does).
func (d *simController) endTerm(err error) {
	d.b.c.sched.Tracef("controller %d resigns: %v", d.b.id, err)
	d.c.Resign(context.Background())
	switch {
	case !d.alive() || errors.Is(err, store.ErrSessionExpired):
	case controller.LostControl(err):
		d.after(0, "stand again", d.elect)
	default:
		d.after(controller.FailureBackoff, "stand again", d.elect)
	}
}

// stop ends the controller without touching the store (the broker
// crashed, stopped, or its session ended): a call waiting for the
// connection fails, and nothing of it runs again.
func (d *simController) stop() { d.run.stop() }

func (d *simController) after(wait time.Duration, name string, fn func()) {
	d.b.c.sched.After(wait, fmt.Sprintf("broker %d controller: %s", d.b.id, name), func() {
		if d.alive() {
			fn()
		}
	})
}

// state is the active controller's state, nil if this is not one.
func (d *simController) state() *controller.ClusterState {
	if !d.alive() || !d.c.IsActive() {
		return nil
	}
	return d.c.State()
}

// Watch is controller.Env's: the store watch is an event.
func (d *simController) Watch(ch <-chan store.Event, fire func(store.Event)) {
	d.b.watch("controller's", ch, func(ev store.Event) {
		if d.alive() {
			fire(ev)
		}
	})
}

// After is controller.Env's: a timer on the virtual clock.
func (d *simController) After(wait time.Duration, fn func()) {
	d.b.c.sched.After(wait, fmt.Sprintf("~broker %d controller timer", d.b.id), func() {
		if d.alive() {
			fn()
		}
	})
}

// Wake is controller.Env's: a Step runs as the next event.
func (d *simController) Wake() {
	if d.stepQueued {
		return
	}
	d.stepQueued = true
	d.b.c.sched.After(0, fmt.Sprintf("~broker %d controller step", d.b.id), func() {
		d.stepQueued = false
		d.step()
	})
}

// Send is controller.Env's: the request crosses the network to the
// broker, which serves it once registered (broker.Run registers before its
// listeners accept), and its answer crosses back; done gets an error when
// neither came back within the round trip's longest delay.
func (d *simController) Send(to int32, req kmsg.Request, done func(kmsg.Response, error)) {
	c := d.b.c
	from := d.b.id
	target := c.brokers[to-1]
	tinc := target.incarnation
	name := kmsg.NameForKey(req.Key())
	finished := false
	finish := func(resp kmsg.Response, err error) {
		if finished || !d.alive() {
			return
		}
		finished = true
		done(resp, err)
	}
	c.net.Send(from, to, name, func() {
		if !target.live(tinc) || !target.registered {
			return // not registered: the request is for an earlier incarnation
		}
		resp := target.serveControl(req)
		c.net.Send(to, from, name+" answer", func() { finish(resp, nil) })
	})
	c.sched.After(2*c.cfg.Net.MaxDelay, "~controller request timeout", func() { finish(nil, errLost) })
}

// serveControl is the broker's side of the controller's requests.
// UpdateMetadata fills the cache a controller of this broker starts from
// (metadata_cache.go).
func (b *Broker) serveControl(req kmsg.Request) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.UpdateMetadataRequest:
		b.onUpdateMetadata(r)
		return r.ResponseKind()
	case *kmsg.LeaderAndISRRequest:
		b.servesControl(r)
		resp := r.ResponseKind().(*kmsg.LeaderAndISRResponse)
		resp.Version = r.Version
		return resp
	case *kmsg.StopReplicaRequest:
		return b.onStopReplica(r)
	}
	return req.ResponseKind()
}

// serveNow submits a request to the controller's loop and runs a Step at
// once, since the seams that carry these requests are synchronous; ok is
// false when the loop waits for ZooKeeper: the request is served later,
// and its answer is dropped (the client timed out).
func serveNow[R any](d *simController, submit func(done func(R))) (resp R, ok bool) {
	submit(func(r R) { resp, ok = r, true })
	if !ok {
		d.step()
	}
	return resp, ok
}

// alterPartition serves an AlterPartition on the controller at once (the
// seam, replica.Cluster, is synchronous); an error is a request that timed
// out because the loop is waiting for ZooKeeper, and is served later.
func (d *simController) alterPartition(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	resp, ok := serveNow(d, func(done func(*kmsg.AlterPartitionResponse)) { d.c.AlterPartitionAsync(req, done) })
	if !ok {
		return nil, errBlocked
	}
	return resp, nil
}

// errBlocked: the controller's loop is waiting for its store.
var errBlocked = errors.New("sim: controller blocked on a lost connection")

func notController(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	resp.ErrorCode = kerr.NotController.Code
	return resp
}

// controlledShutdown serves a ControlledShutdown on the controller at
// once; false: no answer (the loop is waiting for its store).
func (d *simController) controlledShutdown(req *kmsg.ControlledShutdownRequest) (*kmsg.ControlledShutdownResponse, bool) {
	return serveNow(d, func(done func(*kmsg.ControlledShutdownResponse)) { d.c.ControlledShutdownAsync(req, done) })
}

// blockingStore is the controller's store: the broker's session, where a
// call on a lost connection waits on the runner until it is answered.
type blockingStore struct {
	*ZKSession
	run *ctrlRunner
}

var _ store.Store = blockingStore{}

func (s blockingStore) Create(ctx context.Context, path string, data []byte, flags store.CreateFlags) (name string, err error) {
	err = s.run.retry(func() error { name, err = s.ZKSession.Create(ctx, path, data, flags); return err })
	return name, err
}

func (s blockingStore) Get(ctx context.Context, path string) (data []byte, stat store.Stat, err error) {
	err = s.run.retry(func() error { data, stat, err = s.ZKSession.Get(ctx, path); return err })
	return data, stat, err
}

func (s blockingStore) GetW(ctx context.Context, path string) (data []byte, stat store.Stat, ch <-chan store.Event, err error) {
	err = s.run.retry(func() error { data, stat, ch, err = s.ZKSession.GetW(ctx, path); return err })
	return data, stat, ch, err
}

func (s blockingStore) Exists(ctx context.Context, path string) (ok bool, stat store.Stat, err error) {
	err = s.run.retry(func() error { ok, stat, err = s.ZKSession.Exists(ctx, path); return err })
	return ok, stat, err
}

func (s blockingStore) ExistsW(ctx context.Context, path string) (ok bool, stat store.Stat, ch <-chan store.Event, err error) {
	err = s.run.retry(func() error { ok, stat, ch, err = s.ZKSession.ExistsW(ctx, path); return err })
	return ok, stat, ch, err
}

func (s blockingStore) Children(ctx context.Context, path string) (names []string, stat store.Stat, err error) {
	err = s.run.retry(func() error { names, stat, err = s.ZKSession.Children(ctx, path); return err })
	return names, stat, err
}

func (s blockingStore) ChildrenW(ctx context.Context, path string) (names []string, stat store.Stat, ch <-chan store.Event, err error) {
	err = s.run.retry(func() error { names, stat, ch, err = s.ZKSession.ChildrenW(ctx, path); return err })
	return names, stat, ch, err
}

func (s blockingStore) Set(ctx context.Context, path string, data []byte, version int32) (stat store.Stat, err error) {
	err = s.run.retry(func() error { stat, err = s.ZKSession.Set(ctx, path, data, version); return err })
	return stat, err
}

func (s blockingStore) Delete(ctx context.Context, path string, version int32) error {
	return s.run.retry(func() error { return s.ZKSession.Delete(ctx, path, version) })
}

func (s blockingStore) Multi(ctx context.Context, ops ...store.Op) error {
	return s.run.retry(func() error { return s.ZKSession.Multi(ctx, ops...) })
}

// ctrlRunner runs a controller's code on a goroutine of its own, one piece
// at a time and never beside the scheduler, so that a store call on a lost
// connection can wait, holding up the controller's loop, as zkstore's
// resends do, while the rest of the run goes on: the goroutine yields to
// the scheduler and resumes at the next resend. Only one of the two
// goroutines runs at any moment (each hands over to the other and waits),
// so a seed replays.
type ctrlRunner struct {
	sched *Scheduler
	id    int32
	work  chan func()
	// yield carries the runner's hand-over: true, blocked on the store;
	// false, the piece is done. resume hands back for a resend.
	yield  chan bool
	resume chan struct{}
	// busy: a piece runs or is blocked; queue waits for it.
	busy, blocked, dead bool
	queue               []func()
}

func newCtrlRunner(s *Scheduler, id int32) *ctrlRunner {
	r := &ctrlRunner{sched: s, id: id, work: make(chan func()), yield: make(chan bool), resume: make(chan struct{})}
	go func() {
		for fn := range r.work {
			fn()
			r.yield <- false
		}
	}()
	return r
}

// do runs fn on the runner now, or once the piece before it is done.
func (r *ctrlRunner) do(fn func()) {
	if r.dead {
		return
	}
	if r.busy {
		r.queue = append(r.queue, fn)
		return
	}
	r.busy = true
	r.work <- fn
	r.wait()
}

// wait takes the runner's hand-over: a blocked piece is resent after
// zkResend; a done one lets the next queued piece run.
func (r *ctrlRunner) wait() {
	for {
		if <-r.yield {
			r.blocked = true
			r.sched.After(zkResend, fmt.Sprintf("~controller %d resends to zookeeper", r.id), func() {
				if !r.blocked {
					return
				}
				r.blocked = false
				r.resume <- struct{}{}
				r.wait()
			})
			return
		}
		if r.dead || len(r.queue) == 0 {
			r.busy = false
			return
		}
		fn := r.queue[0]
		r.queue = r.queue[1:]
		r.work <- fn
	}
}

// errStopped is what the store answers a controller whose broker stopped.
var errStopped = fmt.Errorf("%w (sim: the broker stopped)", store.ErrSessionExpired)

// retry runs a store call on the runner's goroutine until it gets an
// answer that is not a lost connection.
func (r *ctrlRunner) retry(call func() error) error {
	for {
		err := call()
		if !errors.Is(err, ErrConnectionLoss) {
			return err
		}
		if r.dead {
			return errStopped
		}
		r.yield <- true
		<-r.resume
		if r.dead {
			return errStopped
		}
	}
}

// stop ends the runner: a blocked piece fails its call and finishes, the
// queue is dropped and the goroutine ends.
func (r *ctrlRunner) stop() {
	if r.dead {
		return
	}
	r.dead = true
	r.queue = nil
	if r.blocked {
		r.blocked = false
		r.resume <- struct{}{}
		for <-r.yield { // dead: it cannot block again
		}
	}
	r.busy = false
	close(r.work)
}
