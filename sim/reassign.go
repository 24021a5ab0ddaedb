package sim

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/controller"
)

// The reassignment workload: an admin moves the topic's partitions'
// replicas (the offsets partition's too, when groups run: its
// coordinator moves with its leader) while the producer writes and the
// faults go on, to replica
// sets of two or three brokers (adding replicas that start from an empty
// log, removing others, changing the replication factor). Two paths, as
// Kafka offers them: AlterPartitionReassignments to the controller the
// /controller znode names (resent until answered, like a client; a
// NOT_CONTROLLER answer sends it to the controller named then), and
// /admin/reassign_partitions written as the pre-2.4 tools do. The admin
// starts one reassignment at a time, only on a partition not being
// reassigned and while /admin/reassign_partitions does not exist (Kafka's
// tool refuses then), so that every decision is a reassignment of its
// own: replacing or cancelling one in progress may drop an added replica
// that is the last of the ISR, which Kafka allows (the operator's choice)
// and the checks would have to forgive. The controller's side is the
// real decisions (reassign_driver.go).
//
// Invariants: whenever ZooKeeper shows a partition's reassignment
// completed, the ISR written with it holds every replica of the new
// replica set (Kafka's isReassignmentComplete: the target replicas were
// in sync); the stored leader and ISR are always within the stored
// replica set (a removed replica leaves them when the reassignment
// completes); after the quiet phase no reassignment is in progress,
// /admin/reassign_partitions is gone, each partition's replicas are those
// the last reassignment asked for, and a removed replica leads no
// partition in the current leader epoch. The existing invariants (no
// acknowledged record lost, HW, one leader per epoch, ISR prefix, acks=all
// over min.insync.replicas) hold across the moves.

type reassignWorkload struct {
	c *Cluster
	// want are the replica sets each partition may end with: the last
	// accepted target, and a target whose acceptance is unknown (an
	// answer lost, then an error to the resend).
	want map[int32][][]int32
	// req is the API request in flight, nil when none.
	req *reassignRequest
	// writes is ZK.writes when the assignments were last observed;
	// reassigning, which partitions were being reassigned then.
	writes      uint64
	reassigning map[int32]bool
	// requested counts the reassignments asked for (some refused: an
	// added broker is down); completed, those seen in progress that
	// completed (a removal whose remaining replicas are in sync completes
	// in the decision that starts it).
	requested int
	completed int
	// cancels and replaced count the cancels and replacements
	// acknowledged (reassign_change.go).
	cancels, replaced int
	// cancelsMoot counts cancels answered NO_REASSIGNMENT_IN_PROGRESS.
	cancelsMoot int
	// removalsChecked counts the removed replicas finalRemovals checked.
	removalsChecked int
	// replicas are each partition's replica set last seen, removed the
	// replicas that left it since (reassign_change.go).
	replicas map[int32][]int32
	removed  map[int32]map[int32]removal
}

type reassignRequest struct {
	part    int32
	target  []int32
	seq     int
	anyLost bool // an earlier attempt went unanswered: it may have been applied
	// origin is the replica set before the reassignment a cancel or a
	// replacement changes (reassign_change.go), nil for a new one;
	// cancel sends null replicas (target is then the origin).
	origin []int32
	cancel bool
	// from and next are the replica sets before and after a change, for
	// its check before each send (changeSafe).
	from, next []int32
}

func newReassignWorkload(c *Cluster) *reassignWorkload {
	return &reassignWorkload{c: c, want: map[int32][][]int32{}, reassigning: map[int32]bool{},
		replicas: map[int32][]int32{}, removed: map[int32]map[int32]removal{}}
}

// schedule starts a reassignment every 1-3 s of the faulty phase.
func (w *reassignWorkload) schedule() {
	var next func()
	next = func() {
		if w.c.quiet {
			return
		}
		w.start()
		w.c.sched.After(w.c.sched.Between(time.Second, 3*time.Second), "reassign", next)
	}
	w.c.sched.After(w.c.sched.Between(2*time.Second, 4*time.Second), "reassign", next)
}

// start picks a partition not being reassigned and a new replica set.
func (w *reassignWorkload) start() {
	c := w.c
	ctx := context.Background()
	if w.req != nil {
		return
	}
	if ok, _, err := c.admin.Exists(ctx, controller.ReassignPartitionsPath); err != nil || ok {
		return
	}
	a, err := controller.ReadTopic(ctx, c.admin, topic)
	if err != nil {
		c.fail("reassign: read topic: %v", err)
		return
	}
	var idle, moving []int32
	for part := range c.numParts() {
		if len(a.Adding[part]) == 0 && len(a.Removing[part]) == 0 {
			idle = append(idle, part)
		} else {
			moving = append(moving, part)
		}
	}
	if len(moving) > 0 && c.sched.Chance(reassignChangeShare) && w.startChange(a, moving) {
		return // reassign_change.go
	}
	if len(idle) == 0 {
		return
	}
	part := idle[c.sched.Rand.Intn(len(idle))]
	n := 2 + c.sched.Rand.Intn(int(c.cfg.Brokers)-1) // 2 .. Brokers replicas
	var target []int32
	for _, i := range c.sched.Rand.Perm(int(c.cfg.Brokers))[:n] {
		target = append(target, int32(i)+1)
	}
	if slices.Equal(target, a.Partitions[part]) {
		return
	}
	w.requested++
	if c.sched.Chance(0.3) {
		data, err := json.Marshal(map[string]any{"version": 1, "partitions": []map[string]any{{"topic": topic, "partition": part, "replicas": target}}})
		if err != nil {
			c.fail("reassign: %v", err)
			return
		}
		if _, err := c.admin.Create(ctx, controller.ReassignPartitionsPath, data, 0); err != nil {
			c.fail("reassign: create %s: %v", controller.ReassignPartitionsPath, err)
			return
		}
		w.want[part] = [][]int32{target}
		c.sched.Tracef("reassign: p%d from %v to %v through %s", part, a.Partitions[part], target, controller.ReassignPartitionsPath)
		return
	}
	w.req = &reassignRequest{part: part, target: target}
	c.sched.Tracef("reassign: p%d from %v to %v through AlterPartitionReassignments", part, a.Partitions[part], target)
	w.send()
}

// send sends the request in flight to the controller /controller names,
// resending after a timeout until an answer comes back.
func (w *reassignWorkload) send() {
	c := w.c
	r := w.req
	r.seq++
	seq := r.seq
	retry := func(after time.Duration) {
		c.sched.After(after, "~reassign resend", func() {
			if w.req == r && r.seq == seq {
				r.anyLost = true
				w.send()
			}
		})
	}
	if r.origin != nil && r.seq > 1 && !w.changeSafe(r.part, r.from, r.next) {
		// The admin gives up a change its check now refuses (reassign_change.go).
		if r.anyLost {
			w.want[r.part] = append(w.want[r.part], r.target)
		}
		c.sched.Tracef("reassign: p%d change to %v given up: it would now remove an ISR member", r.part, r.target)
		w.req = nil
		return
	}
	id := w.controllerID()
	if id < 0 {
		retry(200 * time.Millisecond)
		return
	}
	tb := c.brokers[id-1]
	inc := tb.incarnation
	req := []controller.ReassignmentRequest{{TP: controller.TP{Topic: topic, Partition: r.part}, Target: slices.Clone(r.target)}}
	if r.cancel {
		req[0].Target = nil
	}
	c.net.Send(clientNode, id, "AlterPartitionReassignments", func() {
		if !tb.live(inc) || !tb.registered {
			return
		}
		code, ok := kerr.NotController.Code, true
		var res map[controller.TP]controller.ApiError
		if tb.ctrl != nil {
			res, code, ok = tb.ctrl.alterReassignments(req)
		}
		if !ok {
			return // the client times out
		}
		c.net.Send(id, clientNode, "AlterPartitionReassignments answer", func() {
			if w.req != r || r.seq != seq {
				return
			}
			w.answered(code, res[req[0].TP])
		})
	})
	retry(2*c.cfg.Net.MaxDelay + controller.SendRetryBackoff)
}

func (w *reassignWorkload) answered(code int16, res controller.ApiError) {
	c := w.c
	r := w.req
	switch {
	case code == kerr.NotController.Code:
		r.seq++ // the timeout's resend is replaced by this one
		seq := r.seq
		c.sched.After(200*time.Millisecond, "~reassign to the new controller", func() {
			if w.req == r && r.seq == seq {
				w.send()
			}
		})
		return
	case res.Code == 0:
		w.want[r.part] = [][]int32{r.target}
		switch {
		case r.cancel:
			w.cancels++
			w.cancelAcked(r.part, r.target) // reassign_change.go
		case r.origin != nil:
			w.replaced++
		default:
			w.changeSoon()
		}
	case r.anyLost:
		w.want[r.part] = append(w.want[r.part], r.target)
	case r.cancel && res.Code == kerr.NoReassignmentInProgress.Code:
		// Nothing in progress: the reassignment completed, or a copy of
		// this cancel the network duplicated was applied first and this
		// answer is the copy's (seeds 2511, 1620); either set may stand.
		w.cancelsMoot++
		w.want[r.part] = append(w.want[r.part], r.target)
	}
	c.sched.Tracef("reassign: p%d to %v answered: error %d %s", r.part, r.target, res.Code, res.Message)
	w.req = nil
}

// controllerID is the broker /controller names, -1 when none.
func (w *reassignWorkload) controllerID() int32 {
	data, _, err := w.c.admin.Get(context.Background(), controller.ControllerPath)
	if err != nil {
		return -1
	}
	var node struct {
		BrokerID int32 `json:"brokerid"`
	}
	if json.Unmarshal(data, &node) != nil || node.BrokerID < 1 || node.BrokerID > w.c.cfg.Brokers {
		return -1
	}
	return node.BrokerID
}

// step checks, after each event that wrote to ZooKeeper, the stored
// assignments and states against each other.
func (w *reassignWorkload) step() {
	c := w.c
	if c.zk.writes == w.writes {
		return
	}
	w.writes = c.zk.writes
	a, err := controller.ReadTopic(context.Background(), c.admin, topic)
	if err != nil {
		c.fail("reassign: read topic: %v", err)
		return
	}
	for part := range c.numParts() {
		rs := a.Partitions[part]
		now := len(a.Adding[part]) > 0 || len(a.Removing[part]) > 0
		was := w.reassigning[part]
		w.reassigning[part] = now
		ps, ok := c.inv.storedState(part)
		if !ok {
			continue
		}
		w.noteRemovals(part, rs)
		if was && !now {
			w.completed++
			c.sched.Tracef("reassign: p%d completed: replicas %v, leader %d, ISR %v", part, rs, ps.Leader, ps.ISR)
			if w.backToOrigin(part, rs) {
				continue // reassign_change.go
			}
			for _, r := range rs {
				if !slices.Contains(ps.ISR, r) {
					c.fail("p%d: reassignment completed to replicas %v with ISR %v: replica %d was not in sync", part, rs, ps.ISR, r)
					return
				}
			}
		}
		if ps.Leader >= 0 && !slices.Contains(rs, ps.Leader) {
			c.fail("p%d: leader %d is not a replica (%v, adding %v, removing %v)", part, ps.Leader, rs, a.Adding[part], a.Removing[part])
			return
		}
		for _, r := range ps.ISR {
			if !slices.Contains(rs, r) {
				c.fail("p%d: ISR %v has broker %d, not a replica (%v, adding %v, removing %v)", part, ps.ISR, r, rs, a.Adding[part], a.Removing[part])
				return
			}
		}
	}
}

// final: every reassignment completed as last asked, and the replicas it
// removed lead nothing.
func (w *reassignWorkload) final() {
	c := w.c
	ctx := context.Background()
	if ok, _, err := c.admin.Exists(ctx, controller.ReassignPartitionsPath); err != nil || ok {
		c.fail("reassign: %s still there after the quiet phase (err %v)", controller.ReassignPartitionsPath, err)
		return
	}
	a, err := controller.ReadTopic(ctx, c.admin, topic)
	if err != nil {
		c.fail("reassign: read topic: %v", err)
		return
	}
	for part := range c.numParts() {
		rs := a.Partitions[part]
		if len(a.Adding[part]) > 0 || len(a.Removing[part]) > 0 {
			c.fail("p%d: reassignment to %v not completed after the quiet phase (replicas %v, adding %v, removing %v)", part, a.Partitions[part], rs, a.Adding[part], a.Removing[part])
			return
		}
		if want := w.want[part]; want != nil && !slices.ContainsFunc(want, func(t []int32) bool { return slices.Equal(t, rs) }) {
			c.fail("p%d: replicas %v after the quiet phase, the admin asked for %v", part, rs, want)
			return
		}
		ps, _ := c.inv.storedState(part)
		for _, b := range c.brokers {
			if slices.Contains(rs, b.id) || !b.up {
				continue
			}
			if p := b.rm.Get(topic, part); p != nil {
				st := p.State()
				// A removed replica whose StopReplica was lost (its
				// controller moved before sending it) keeps the partition,
				// in Kafka too, but at an earlier leader epoch.
				if st.LeaderEpoch >= ps.LeaderEpoch && st.Leader == b.id {
					c.fail("p%d: removed replica %d leads in epoch %d (replicas %v, stored epoch %d)", part, b.id, st.LeaderEpoch, rs, ps.LeaderEpoch)
					return
				}
				c.sched.Tracef("p%d: removed replica %d still hosts the partition (leader %d, epoch %d)", part, b.id, st.Leader, st.LeaderEpoch)
			}
		}
	}
	w.finalRemovals()
}
