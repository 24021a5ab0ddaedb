package controller

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller/store"
)

// The controller's step form. Run drives a controller with goroutines:
// one per watch (forward), one per broker channel, time's timers. A
// stepped controller (NewStepped) has none: its driver (the simulation,
// sim/) calls TryElect, StartTerm, Step and Resign on one goroutine, and
// the Env delivers its watches, its requests' answers and its timers as
// calls on that goroutine. Run is the same steps on goroutines, so the
// logic between them is one.

// Env is what a stepped controller runs on besides its store. Every
// callback it is given must be called on the driver's goroutine, never
// during a call of the controller's.
type Env interface {
	// Watch calls fire once with the event ch delivers (a one-shot store
	// watch).
	Watch(ch <-chan store.Event, fire func(store.Event))
	// Send delivers req to broker and calls done once with the answer, or
	// with an error when the request or the answer is lost (after a
	// timeout). The channel resends after SendRetryBackoff.
	Send(broker int32, req kmsg.Request, done func(kmsg.Response, error))
	// After calls f once d has passed on the driver's clock.
	After(d time.Duration, f func())
	// Wake says events are pending: the driver calls Step soon.
	Wake()
}

// NewStepped returns a controller driven through env instead of Run.
func NewStepped(cfg Config, st Store, env Env) *Controller {
	c := New(cfg, st, nil)
	c.env = env
	return c
}

// TryElect stands once for controller (Run's election): won, the term
// begins with StartTerm; lost, the watch fires when /controller goes.
func (c *Controller) TryElect(ctx context.Context) (won bool, watch <-chan store.Event, err error) {
	return c.tryElect(ctx)
}

// StartTerm begins an elected controller's term, as Kafka's
// onControllerFailover: it arms the watches, loads the cluster state and
// sends every broker what it must know. An error ends the term (Resign).
func (c *Controller) StartTerm(ctx context.Context) error {
	c.term++
	c.channels = map[int32]brokerChannel{}
	c.deletions = map[string]*deletion{}
	c.deletionsArmed = false
	c.prefElectArmed = false
	c.brokerWatches = map[int32]bool{}
	if err := c.watchControllerNode(ctx); err != nil {
		return err
	}
	// First, as Kafka's onControllerFailover does.
	if err := c.setupFeatures(ctx); err != nil {
		return err
	}
	c.seeding, c.seeded, c.seedPending = c.cfg.CachedStates != nil, nil, nil
	elected, err := c.loadAndAct(ctx)
	if err != nil && len(c.seeded) > 0 && errors.Is(err, store.ErrBadVersion) && !errors.Is(err, errLostControl) {
		// A seeded state was out of date (seed.go): a write conditional
		// on it failed. Read every state and start again; what was
		// written before the failure stays written, and the load reads it.
		c.log.Warn("cached partition states were out of date; reading every state", "err", err)
		c.resetState()
		elected, err = c.loadAndAct(ctx)
	}
	if err != nil {
		return err
	}
	if unconfirmed := unwritten(c.seeded, elected.Writes); len(unconfirmed) > 0 {
		c.startSeedCheck(ctx, unconfirmed)
	}
	if c.env != nil && c.cfg.AutoLeaderRebalanceEnable {
		c.scheduleRebalance(c.term)
	}
	return nil
}

// loadAndAct is the body of StartTerm: load the state (seeded when
// c.seeding says so), act on it as a new controller, and handle what
// waited for one. It returns OnElected's actions, done.
func (c *Controller) loadAndAct(ctx context.Context) (Actions, error) {
	begun := c.cfg.Now()
	err := c.load(ctx)
	c.seeding = false
	if err != nil {
		return Actions{}, err
	}
	loaded := c.cfg.Now()
	elected := c.state.OnElected()
	if err := c.execute(ctx, elected); err != nil {
		return Actions{}, err
	}
	// The phases of a failover, for an operator wondering where a slow
	// one went (at tens of thousands of partitions, ZooKeeper's reads and
	// writes): Kafka's controller logs its failover steps too. apply is
	// the state writes and the requests queued to the brokers.
	c.log.Info("controller term started", "topics", len(c.state.Topics), "load", loaded.Sub(begun),
		"seeded", len(c.seeded), "state_writes", len(elected.Writes), "apply", c.cfg.Now().Sub(loaded))
	for _, step := range []func(context.Context) error{
		c.initializeReassignments, c.processDeletions, c.processLogDirEvents,
		c.processIsrChanges, c.processZkPreferredElection,
	} {
		if err := step(ctx); err != nil {
			return Actions{}, err
		}
	}
	return elected, nil
}

// scheduleRebalance is Run's rebalance ticker on the Env's clock.
func (c *Controller) scheduleRebalance(term uint64) {
	c.env.After(c.cfg.LeaderImbalanceCheckInterval, func() {
		if c.term != term {
			return
		}
		c.post(func(p *pendingEvents) { p.rebalance = true })
		c.scheduleRebalance(term)
	})
}

// Step handles the events pending since the last step. A failure the loop
// cannot mend ends the term: another controller took over, the session
// ended, or the state could not be reloaded; the caller then resigns.
func (c *Controller) Step(ctx context.Context) error {
	c.mu.Lock()
	p := c.pending
	c.pending = pendingEvents{}
	c.mu.Unlock()
	err := c.handle(ctx, p)
	if err == nil {
		return nil
	}
	if errors.Is(err, errLostControl) || errors.Is(err, store.ErrSessionExpired) || ctx.Err() != nil {
		return err
	}
	// Something unexpected (a store error, a znode changed behind our
	// back): rebuild the state from the store and resend everything, as a
	// newly elected controller would.
	c.log.Error("controller event failed; reloading state", "err", err)
	return c.resync(ctx)
}

// Resign ends a term (Run's resignation): the broker channels stop, the
// waiting calls are answered NOT_CONTROLLER, /controller is deleted if
// still ours.
func (c *Controller) Resign(ctx context.Context) { c.resign(ctx) }

// LostControl reports whether err, which ended a term, says that another
// controller took over (Run stands again at once; after any other error
// it waits FailureBackoff).
func LostControl(err error) bool { return errors.Is(err, errLostControl) }

// State is the active controller's cluster state, nil between terms. It
// is owned by the loop: a stepped controller's driver may read it between
// calls, never change it.
func (c *Controller) State() *ClusterState { return c.state }

// newState is a term's empty cluster state.
func (c *Controller) newState(epoch int32) *ClusterState {
	s := NewClusterState(c.cfg.BrokerID, epoch)
	s.Faults = c.cfg.Faults
	return s
}

// submit queues f for the loop; f gets false when this broker is not (or
// stops being) the active controller, and then runs at once.
func (c *Controller) submit(ctx context.Context, f func(loopCtx context.Context, active bool)) {
	// Checked and queued under mu, which resign also holds while it answers
	// queued calls, so no call is left behind by a resignation.
	c.mu.Lock()
	if !c.active.Load() {
		c.mu.Unlock()
		f(ctx, false)
		return
	}
	c.pending.calls = append(c.pending.calls, f)
	c.mu.Unlock()
	c.notify()
}

// AlterPartitionAsync is AlterPartition for a stepped controller: done
// gets the answer from the Step that serves it (or at once when this
// broker is not the controller).
func (c *Controller) AlterPartitionAsync(req *kmsg.AlterPartitionRequest, done func(*kmsg.AlterPartitionResponse)) {
	c.submit(context.Background(), func(loopCtx context.Context, active bool) { done(c.serveAlterPartition(loopCtx, active, req)) })
}

// ControlledShutdownAsync is ControlledShutdown for a stepped controller.
func (c *Controller) ControlledShutdownAsync(req *kmsg.ControlledShutdownRequest, done func(*kmsg.ControlledShutdownResponse)) {
	c.submit(context.Background(), func(loopCtx context.Context, active bool) { done(c.serveControlledShutdown(loopCtx, active, req)) })
}

// AlterPartitionReassignmentsAsync is AlterPartitionReassignments for a
// stepped controller.
func (c *Controller) AlterPartitionReassignmentsAsync(req *kmsg.AlterPartitionAssignmentsRequest, done func(*kmsg.AlterPartitionAssignmentsResponse)) {
	c.submit(context.Background(), func(loopCtx context.Context, active bool) { done(c.serveAlterReassignments(loopCtx, active, req)) })
}
