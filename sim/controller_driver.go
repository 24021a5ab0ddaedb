package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/controller/store"
)

// The controller driver does, in scheduler events, what the controller's
// event loop (controller/controller.go, election.go, execute.go) does on
// its goroutines: election through /controller, loading the state, and
// performing the decisions of the real pure core (controller.ClusterState:
// OnElected, OnBrokersChange, OnAlterPartition) — writes fenced by the
// controller epoch first, then LeaderAndISR in order per broker, each
// request resent until answered, as brokerChannel does. The decisions and
// request building are the real code; this loop is a model of the driver
// (see docs/architecture.md, "Simulation").

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

// standForController is controller.tryElect: create the ephemeral
// /controller and bump /controller_epoch in one multi, or watch the winner.
func (b *Broker) standForController(inc int) {
	if !b.live(inc) || !b.registered || b.ctrl != nil {
		return
	}
	ctx := context.Background()
	retry := func() {
		b.c.sched.After(controller.FailureBackoff, fmt.Sprintf("broker %d stand again", b.id), func() { b.standForController(inc) })
	}
	exists, _, ch, err := b.sess.ExistsW(ctx, controller.ControllerPath)
	if err != nil {
		retry()
		return
	}
	if exists {
		b.watch("controller", ch, func(store.Event) { b.standForController(inc) })
		return
	}
	data, stat, err := b.sess.Get(ctx, controller.ControllerEpochPath)
	if errors.Is(err, store.ErrNoNode) {
		if _, err := b.sess.Create(ctx, controller.ControllerEpochPath, []byte("0"), 0); err != nil && !errors.Is(err, store.ErrNodeExists) {
			retry()
			return
		}
		data, stat, err = b.sess.Get(ctx, controller.ControllerEpochPath)
	}
	if err != nil {
		retry()
		return
	}
	epoch, err := strconv.Atoi(string(data))
	if err != nil {
		b.c.fail("controller epoch %q: %v", data, err)
		return
	}
	epoch++
	node := fmt.Sprintf(`{"version":2,"brokerid":%d,"timestamp":"%d","kraftControllerEpoch":-1}`, b.id, b.c.sched.Now().UnixMilli())
	err = b.sess.Multi(ctx,
		store.CreateOp{Path: controller.ControllerPath, Data: []byte(node), Flags: store.Ephemeral},
		store.SetOp{Path: controller.ControllerEpochPath, Data: []byte(strconv.Itoa(epoch)), Version: stat.Version},
	)
	if errors.Is(err, store.ErrNodeExists) || errors.Is(err, store.ErrBadVersion) {
		b.standForController(inc) // lost the race: watch the winner
		return
	}
	if err != nil {
		retry()
		return
	}
	d := &ctrlDriver{b: b, inc: inc, state: controller.NewClusterState(b.id, int32(epoch)), epochVersion: stat.Version + 1,
		active: true, channels: map[int32]*channel{}, deletions: map[string]*deletion{}}
	d.state.Faults = b.c.cfg.ControllerFaults
	b.ctrl = d
	b.c.sched.Tracef("broker %d elected controller, epoch %d", b.id, epoch)
	d.run("activate", d.activate)
}

// ctrlDriver is one controller term on one broker.
type ctrlDriver struct {
	b            *Broker
	inc          int
	state        *controller.ClusterState
	epochVersion int32
	active       bool
	// busy: a write waits for the store (see execute); events wait too.
	busy bool
	// loaded: the first read of the live brokers is done.
	loaded   bool
	channels map[int32]*channel
	// deletions are the topic deletions in progress (topics.go).
	deletions      map[string]*deletion
	deletionsArmed bool
	zkReassign     zkReassign // reassign_driver.go
}

func (d *ctrlDriver) sess() *ZKSession { return d.b.sess }

func (d *ctrlDriver) activate() error {
	if err := d.watchControllerNode(); err != nil {
		return err
	}
	if err := d.watchBrokers(); err != nil {
		return err
	}
	if _, err := d.watchTopics(); err != nil {
		return err
	}
	return d.steps(func() error { return d.execute(d.state.OnElected()) }, d.initializeReassignments, d.processDeletions)
}

// steps runs handlers of the loop in order; when one blocks on a lost
// connection, the rest run once it is written (run waits while busy).
func (d *ctrlDriver) steps(fns ...func() error) error {
	for i, fn := range fns {
		err := fn()
		if errors.Is(err, errBlocked) && i+1 < len(fns) {
			rest := fns[i+1:]
			d.run("the rest of the election", func() error { return d.steps(rest...) })
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// loadTopic is controller.loadTopic: the assignment and the states not
// known yet; it returns the partitions added.
func (d *ctrlDriver) loadTopic(name string) ([]controller.TP, error) {
	ctx := context.Background()
	a, err := controller.ReadTopic(ctx, d.sess(), name)
	if errors.Is(err, store.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read topic %s: %w", name, err)
	}
	var known map[int32]controller.PartitionState
	if t := d.state.Topics[name]; t != nil && t.ID == a.TopicID {
		known = t.States
	}
	states := map[int32]controller.PartitionState{}
	for p := range a.Partitions {
		if _, ok := known[p]; ok {
			continue
		}
		data, stat, err := d.sess().Get(ctx, controller.PartitionStatePath(name, p))
		if errors.Is(err, store.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read state of %s-%d: %w", name, p, err)
		}
		ps, err := controller.DecodePartitionState(data, stat)
		if err != nil {
			return nil, err
		}
		states[p] = ps
	}
	added := d.state.OnAssignmentChange(name, a)
	t := d.state.Topics[name]
	for p, ps := range states {
		t.States[p] = ps
	}
	return added, nil
}

// watchControllerNode is controller.watchControllerNode: still ours?
func (d *ctrlDriver) watchControllerNode() error {
	_, stat, ch, err := d.sess().GetW(context.Background(), controller.ControllerPath)
	if errors.Is(err, store.ErrNoNode) {
		return errors.New("lost controllership: /controller deleted")
	}
	if err != nil {
		return err
	}
	if stat.EphemeralOwner != d.sess().SessionID() {
		return fmt.Errorf("lost controllership: /controller owned by session %d", stat.EphemeralOwner)
	}
	d.onWatch("controller node", ch, d.watchControllerNode)
	return nil
}

// onWatch arms a watch whose firing runs handler in the loop; the end of
// the session resigns, as the controller's forward does.
func (d *ctrlDriver) onWatch(name string, ch <-chan store.Event, handler func() error) {
	d.b.watch(name, ch, func(ev store.Event) {
		if !d.active {
			return
		}
		if ev.Type == store.EventNotWatching {
			d.resign("session ended")
			return
		}
		d.run(name, handler)
	})
}

// watchBrokers reads the live brokers, arming the watch on /brokers/ids,
// and keeps a channel for each (a new registration epoch gets a new one).
func (d *ctrlDriver) watchBrokers() error {
	ctx := context.Background()
	_, _, ch, err := d.sess().ChildrenW(ctx, controller.BrokerIDsPath)
	if err != nil {
		return fmt.Errorf("list brokers: %w", err)
	}
	d.onWatch("brokers", ch, d.watchBrokers)
	infos, err := controller.LiveBrokers(ctx, d.sess())
	if err != nil {
		return err
	}
	live := map[int32]controller.BrokerInfo{}
	for _, bi := range infos {
		live[bi.ID] = bi
	}
	if !d.loaded {
		d.loaded = true
		d.state.Live = live
		d.syncChannels()
		return nil
	}
	gone := map[int32]bool{}
	for id, bi := range d.state.Live {
		if nb, ok := live[id]; !ok || nb.Epoch != bi.Epoch {
			d.stopChannel(id)
			gone[id] = true
		}
	}
	// A StopReplica queued for a broker that died or restarted is never
	// answered: such deletions start over (controller.onBrokersChange).
	for _, name := range sortedKeys(d.deletions) {
		for id := range d.deletions[name].waiting {
			if gone[id] {
				d.deletions[name].eligible = false
			}
		}
	}
	acts := d.state.OnBrokersChange(live)
	d.syncChannels()
	if err := d.execute(acts); err != nil {
		return err
	}
	return d.processDeletions()
}

func (d *ctrlDriver) syncChannels() {
	for id := range d.channels {
		if _, ok := d.state.Live[id]; !ok {
			d.stopChannel(id)
		}
	}
	for id := range d.state.Live {
		if d.channels[id] == nil {
			d.channels[id] = &channel{d: d, to: id}
		}
	}
}

func (d *ctrlDriver) stopChannel(id int32) {
	if ch := d.channels[id]; ch != nil {
		ch.stopped = true
		delete(d.channels, id)
	}
}

// execute is controller.execute for the actions the simulated workload
// needs: partition state writes (and reassigned topics' assignments)
// fenced by the controller epoch, then LeaderAndISR per broker in id
// order, then StopReplica (topic deletion, replicas a reassignment removed).
// UpdateMetadata is not simulated (no broker reads metadata).
func (d *ctrlDriver) execute(a controller.Actions) error {
	err := d.tryExecute(a)
	if errors.Is(err, ErrConnectionLoss) {
		// zkstore resends a request until the connection is back or the
		// session is gone, holding up the controller's event loop: so does
		// the driver.
		d.busy = true
		d.retryExecute(a)
		return errBlocked
	}
	return err
}

// errBlocked: the decision is written once the store is reachable again.
var errBlocked = errors.New("sim: controller blocked on a lost connection")

func (d *ctrlDriver) retryExecute(a controller.Actions) {
	d.b.c.sched.After(100*time.Millisecond, fmt.Sprintf("controller %d retries its writes", d.b.id), func() {
		if !d.active {
			return
		}
		switch err := d.tryExecute(a); {
		case errors.Is(err, ErrConnectionLoss):
			d.retryExecute(a)
		case err != nil:
			d.resign(err.Error())
		default:
			d.busy = false
		}
	})
}

// run runs a handler of the event loop: later while the loop is blocked,
// again after a lost connection (its reads come before its decision), and
// a failure resigns.
func (d *ctrlDriver) run(name string, fn func() error) {
	if !d.active {
		return
	}
	if d.busy {
		d.b.c.sched.After(100*time.Millisecond, "~controller busy: "+name, func() { d.run(name, fn) })
		return
	}
	switch err := fn(); {
	case err == nil, errors.Is(err, errBlocked):
	case errors.Is(err, ErrConnectionLoss):
		d.b.c.sched.After(100*time.Millisecond, "~controller retries "+name, func() { d.run(name, fn) })
	default:
		d.resign(fmt.Sprintf("%s: %v", name, err))
	}
}

func (d *ctrlDriver) tryExecute(a controller.Actions) error {
	if !d.active {
		return errors.New("not active")
	}
	ctx := context.Background()
	if len(a.Writes) > 0 || len(a.Assignments) > 0 {
		// The decisions fill Writes in map order; sorted, a seed replays.
		a.Writes = slices.Clone(a.Writes)
		slices.SortFunc(a.Writes, func(x, y controller.StateWrite) int {
			return cmp.Or(strings.Compare(x.TP.Topic, y.TP.Topic), cmp.Compare(x.TP.Partition, y.TP.Partition))
		})
		ops, err := controller.StateWriteOps(ctx, d.sess(), d.epochVersion, d.state, a.Writes, a.Assignments)
		if err != nil {
			return err
		}
		if err := d.sess().Multi(ctx, ops...); err != nil {
			return fmt.Errorf("write partition states: %w", err)
		}
		for _, w := range a.Writes {
			d.b.c.sched.Tracef("controller %d wrote %s: leader %d epoch %d isr %v", d.b.id, w.TP, w.State.Leader, w.State.LeaderEpoch, w.State.ISR)
		}
	}
	if err := d.removeZkReassignments(a.ZkReassignmentDone); err != nil {
		return err
	}
	ids := make([]int32, 0, len(a.LeaderAndISR))
	for id := range a.LeaderAndISR {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if ch := d.channels[id]; ch != nil {
			ch.enqueue(controller.BuildLeaderAndISR(d.state, id, a.LeaderAndISR[id], "PLAINTEXT"), nil)
		}
	}
	d.sendStopReplicas(a.StopReplica)      // topics.go
	d.sendRemoveReplicas(a.RemoveReplicas) // reassign_driver.go
	return nil
}

// alterPartition serves an AlterPartition as controller.AlterPartition;
// an error is a request that timed out (the loop was blocked).
func (d *ctrlDriver) alterPartition(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	if !d.active {
		return notController(req), nil
	}
	if d.busy {
		return nil, errBlocked
	}
	resp, acts := d.state.OnAlterPartition(req)
	switch err := d.execute(acts); {
	case errors.Is(err, errBlocked):
		return nil, err
	case err != nil:
		d.resign(fmt.Sprintf("AlterPartition: %v", err))
		return notController(req), nil
	}
	return resp, nil
}

func notController(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	resp.ErrorCode = kerr.NotController.Code
	return resp
}

// stop ends the term without touching the store (the broker crashed).
func (d *ctrlDriver) stop() {
	d.active = false
	for id := range d.channels {
		d.stopChannel(id)
	}
}

// resign is controller.resign: stop, delete /controller if still ours,
// and stand again after the failure backoff.
func (d *ctrlDriver) resign(why string) {
	if !d.active {
		return
	}
	d.stop()
	b := d.b
	b.c.sched.Tracef("controller %d resigns: %s", b.id, why)
	if b.ctrl == d {
		b.ctrl = nil
	}
	d.deleteNode(b.sess)
}

// deleteNode deletes /controller if sess still owns it, resending on a
// lost connection as zkstore does, then stands again after the backoff.
func (d *ctrlDriver) deleteNode(sess *ZKSession) {
	b := d.b
	ctx := context.Background()
	_, stat, err := sess.Get(ctx, controller.ControllerPath)
	if err == nil && stat.EphemeralOwner == sess.SessionID() {
		err = sess.Delete(ctx, controller.ControllerPath, stat.Version)
	}
	if errors.Is(err, ErrConnectionLoss) && b.live(d.inc) && b.sess == sess {
		b.c.sched.After(100*time.Millisecond, fmt.Sprintf("~controller %d resends its resignation", b.id), func() { d.deleteNode(sess) })
		return
	}
	inc := d.inc
	b.c.sched.After(controller.FailureBackoff, fmt.Sprintf("broker %d stand again", b.id), func() { b.standForController(inc) })
}

// channel is controller.brokerChannel: one broker's requests in order, the
// head resent until answered.
type channel struct {
	d        *ctrlDriver
	to       int32
	queue    []chanRequest
	inFlight bool
	attempt  int
	stopped  bool
}

// chanRequest is a LeaderAndISR or a StopReplica, and what to do with its
// answer (nil: nothing).
type chanRequest struct {
	req      kmsg.Request
	answered func(kmsg.Response)
}

func (ch *channel) enqueue(req kmsg.Request, answered func(kmsg.Response)) {
	ch.queue = append(ch.queue, chanRequest{req, answered})
	ch.send()
}

func (ch *channel) send() {
	if ch.stopped || ch.inFlight || len(ch.queue) == 0 {
		return
	}
	ch.inFlight = true
	ch.attempt++
	attempt, req := ch.attempt, ch.queue[0]
	c := ch.d.b.c
	from := ch.d.b.id
	target := c.brokers[ch.to-1]
	tinc := target.incarnation
	name := kmsg.NameForKey(req.req.Key())
	c.net.Send(from, ch.to, name, func() {
		if !target.live(tinc) || !target.registered {
			return // not registered: the request is for an earlier incarnation
		}
		var resp kmsg.Response
		switch r := req.req.(type) {
		case *kmsg.LeaderAndISRRequest:
			target.servesControl(r)
		case *kmsg.StopReplicaRequest:
			resp = target.onStopReplica(r)
		}
		c.net.Send(ch.to, from, name+" answer", func() {
			if ch.stopped || ch.attempt != attempt || !ch.inFlight {
				return
			}
			ch.queue = ch.queue[1:]
			ch.inFlight = false
			if req.answered != nil {
				req.answered(resp)
			}
			ch.send()
		})
	})
	c.sched.After(2*c.cfg.Net.MaxDelay+controller.SendRetryBackoff, "~resend timeout", func() {
		if !ch.stopped && ch.inFlight && ch.attempt == attempt {
			ch.inFlight = false
			ch.send()
		}
	})
}
