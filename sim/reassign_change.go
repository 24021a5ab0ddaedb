package sim

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/brook-mq/brook/controller"
)

// Cancelled and replaced reassignments: now and then the admin sends
// AlterPartitionReassignments for a partition being reassigned, with
// null replicas (a cancel: back to the replicas before the reassignment,
// Kafka's origin) or with another target (a replacement). The controller
// takes the replicas the new decision no longer needs out at once
// (Kafka's updateCurrentReassignment, U3 in controller/reassign.go): they
// leave the ISR under a new leader epoch and get StopReplica with delete.
//
// Kafka lets an operator remove that way the leader (the partition stays
// leaderless until an election) or the last member of the ISR (it stays
// in the ISR outside the replicas, the partition offline): the admin
// here removes only replicas outside the ISR, as judged from ZooKeeper
// before each send (changeSafe: an operator's check, not the
// controller's), so that the invariants hold as they are.
//
// Invariants, beyond the reassignments': a cancel completes in its
// decision (nothing is left to add or remove) with the origin's replicas,
// which need not all be in sync, as in Kafka; a replica
// removed from a partition (by any decision) whose broker stayed
// registered under the same broker epoch, known to the controller when
// it removed the replica, while the same controller stayed in charge no
// longer hosts the partition after the quiet phase (it got its
// StopReplica; a controller that moves, or a broker that restarts or
// re-registers, drops the queued StopReplica, in Kafka too).

// reassignChangeShare is the share of the admin's turns spent changing a
// reassignment in progress when there is one.
const reassignChangeShare = 0.4

// changeSoon: after a new reassignment is accepted, now and then the
// admin changes its mind while it is still in progress (most complete
// within a second, before the admin's next turn).
func (w *reassignWorkload) changeSoon() {
	c := w.c
	if !c.sched.Chance(0.5) {
		return
	}
	c.sched.After(c.sched.Between(20*time.Millisecond, 500*time.Millisecond), "reassign change", func() {
		if c.quiet || w.req != nil {
			return
		}
		a, err := controller.ReadTopic(context.Background(), c.admin, topic)
		if err != nil {
			c.fail("reassign: read topic: %v", err)
			return
		}
		var moving []int32
		for part := range c.numParts() {
			if len(a.Adding[part]) > 0 || len(a.Removing[part]) > 0 {
				moving = append(moving, part)
			}
		}
		if len(moving) > 0 {
			w.startChange(a, moving)
		}
	})
}

// removal is a replica's removal from a partition, as ZooKeeper showed it.
type removal struct {
	brokerEpoch     int64 // -1: the broker was not registered then
	controllerEpoch int64
}

// startChange cancels or replaces the reassignment of one of moving; it
// reports whether it sent a request.
func (w *reassignWorkload) startChange(a controller.TopicAssignment, moving []int32) bool {
	c := w.c
	part := moving[c.sched.Rand.Intn(len(moving))]
	cur := controller.ReplicaAssignment{Replicas: a.Partitions[part], Adding: a.Adding[part], Removing: a.Removing[part]}
	cancel := c.sched.Chance(0.5)
	var target []int32
	if cancel {
		target = cur.Origin()
	} else {
		for _, i := range c.sched.Rand.Perm(int(c.cfg.Brokers))[:2+c.sched.Rand.Intn(int(c.cfg.Brokers)-1)] {
			target = append(target, int32(i)+1)
		}
		if slices.Equal(target, cur.Target()) {
			return false
		}
	}
	if !w.changeSafe(part, cur.Replicas, cur.ReassignTo(target).Replicas) {
		return false
	}
	w.requested++
	w.req = &reassignRequest{part: part, target: target, origin: cur.Origin(), cancel: cancel,
		from: slices.Clone(cur.Replicas), next: cur.ReassignTo(target).Replicas}
	what := "replaces it with"
	if cancel {
		what = "cancels it, back to"
	}
	c.sched.Tracef("reassign: p%d being reassigned (replicas %v, adding %v, removing %v): the admin %s %v", part, cur.Replicas, cur.Adding, cur.Removing, what, target)
	w.send()
	return true
}

// changeSafe is the operator's check before a change that takes the
// replicas of from missing in next out of part at once: none of them is
// in the ISR ZooKeeper holds (so none leads, and the ISR keeps its
// members), which leaves a margin against an ISR change before the
// controller decides; the admin checks again before every resend.
func (w *reassignWorkload) changeSafe(part int32, from, next []int32) bool {
	ps, ok := w.c.inv.storedState(part)
	if !ok || ps.Leader < 0 {
		return false
	}
	for _, r := range from {
		if !slices.Contains(next, r) && (slices.Contains(ps.ISR, r) || r == ps.Leader) {
			return false
		}
	}
	return true
}

// backToOrigin reports whether part's completion, just seen, is the
// change in flight returning it to its origin: a decision that leaves
// nothing to add or remove (a cancel, or a replacement whose target is
// the origin) completes at once, with the origin's replicas in sync or
// not, as Kafka's isReassignmentComplete has it. (A reassignment may also
// complete on its own before the cancel arrives, which then answers
// NO_REASSIGNMENT_IN_PROGRESS; cancelAcked checks an accepted one.)
func (w *reassignWorkload) backToOrigin(part int32, rs []int32) bool {
	r := w.req
	return r != nil && r.part == part && r.origin != nil && sameSet(rs, r.origin)
}

// cancelAcked: the controller took the cancel of part's reassignment; it
// completed in the same decision, back to origin.
func (w *reassignWorkload) cancelAcked(part int32, origin []int32) {
	if w.reassigning[part] || !sameSet(w.replicas[part], origin) {
		w.c.fail("p%d: cancel back to %v acknowledged, but ZooKeeper shows replicas %v (reassigning %v)", part, origin, w.replicas[part], w.reassigning[part])
	}
}

// noteRemovals records the replicas that left part's replica set since
// the last look, and forgets those that came back.
func (w *reassignWorkload) noteRemovals(part int32, rs []int32) {
	c := w.c
	prev, seen := w.replicas[part]
	w.replicas[part] = slices.Clone(rs)
	if w.removed[part] == nil {
		w.removed[part] = map[int32]removal{}
	}
	for _, id := range rs {
		delete(w.removed[part], id)
	}
	if !seen {
		return
	}
	for _, id := range prev {
		if slices.Contains(rs, id) {
			continue
		}
		b := c.brokers[id-1]
		r := removal{brokerEpoch: -1, controllerEpoch: w.controllerEpoch()}
		if b.up && b.registered && w.controllerKnows(b) {
			r.brokerEpoch = b.brokerEpoch
		}
		w.removed[part][id] = r
	}
}

// finalRemovals: a removed replica whose broker and controller stayed
// the same since got its StopReplica (delete): it no longer hosts the
// partition.
func (w *reassignWorkload) finalRemovals() {
	c := w.c
	epoch := w.controllerEpoch()
	defer func() { c.sched.Tracef("reassign: %d removed replicas checked stopped", w.removalsChecked) }()
	for part := range c.numParts() {
		for _, id := range sortedKeys(w.removed[part]) {
			r := w.removed[part][id]
			b := c.brokers[id-1]
			if r.brokerEpoch < 0 || r.controllerEpoch != epoch || !b.up || !b.registered || b.brokerEpoch != r.brokerEpoch {
				continue
			}
			w.removalsChecked++
			if p := b.rm.Get(topic, part); p != nil {
				st := p.State()
				c.fail("p%d: replica %d, removed under controller epoch %d, still hosts the partition (leader %d, epoch %d): it never got its StopReplica", part, id, epoch, st.Leader, st.LeaderEpoch)
				return
			}
		}
	}
}

// controllerKnows reports whether the active controller knows b's
// current registration: its StopReplica carries that broker epoch (one
// for an earlier registration is refused, and the controller drops the
// queued requests of a broker it sees re-registered).
func (w *reassignWorkload) controllerKnows(b *Broker) bool {
	active := w.c.activeState()
	return active != nil && active.Live[b.id].Epoch == b.brokerEpoch
}

// controllerEpoch is /controller_epoch, -1 when unreadable.
func (w *reassignWorkload) controllerEpoch() int64 {
	data, _, err := w.c.admin.Get(context.Background(), controller.ControllerEpochPath)
	if err != nil {
		return -1
	}
	e, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return -1
	}
	return e
}

func sameSet(a, b []int32) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(id int32) bool { return !slices.Contains(b, id) })
}
