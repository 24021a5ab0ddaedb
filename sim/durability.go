package sim

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/log"
)

// The simulated disk (fs.go) makes a power failure lose a broker's
// unsynced writes, and Brook, like Kafka (flush.messages and flush.ms
// default to never), does not fsync appends: durability comes from
// replication. So an acknowledged record lost on a crashed broker is no
// violation by itself; it must come back from the other replicas. What
// must hold is Kafka's guarantee: no acknowledged record is lost while an
// in-sync replica still holds it. A record that no member of the ISR
// holds any more (every one of them lost it in a power failure, or the
// last member did) is lost legitimately, as in Kafka, and is no longer
// checked.

// lostByCrash runs after a power failure, once the crashed broker's logs
// are recovered as its next start will find them: acknowledged records
// that no ISR member holds (up: in its log; down: on its disk) are lost
// by crashes and leave the checks, and so do the groups' acknowledged
// commits when the offsets partition lost records below its high
// watermark that way.
func (v *invariants) lostByCrash() {
	c := v.c
	for part := range c.numParts() { // in order: the trace must replay
		recs := v.acked[part]
		ps, ok := v.storedState(part)
		if !ok {
			continue
		}
		if c.cons != nil && part < c.cfg.Partitions {
			c.cons.noteLossEvent(part, func(o *Broker) bool { return slices.Contains(ps.ISR, o.id) }) // reads_lost.go
		}
		kept := recs[:0]
		for _, a := range recs {
			if v.heldInISR(ps.ISR, part, a.offset, a.epoch) {
				kept = append(kept, a)
				continue
			}
			v.lostRecords++
			c.idem.lost(a.value) // idempotent.go
			c.sched.Tracef("p%d: acknowledged %s at offset %d (epoch %d) lost by power failures on every ISR member %v", part, a.value, a.offset, a.epoch, ps.ISR)
		}
		if len(kept) < len(recs) {
			v.forgetReads(part)
		}
		v.acked[part] = kept
	}
	for _, part := range c.coordParts() {
		top, ok := v.maxHW[part]
		if !ok || top.hw == 0 {
			continue
		}
		ps, ok := v.storedState(part)
		if !ok || v.heldInISR(ps.ISR, part, top.hw-1, top.epoch) {
			continue
		}
		c.sched.Tracef("p%d: coordinator records below HW %d (epoch %d at %d) lost by power failures on every ISR member %v; the coordinator's state is forgotten", part, top.hw, top.epoch, top.hw-1, ps.ISR)
		v.forgetCoordinatorState(part)
		delete(v.maxHW, part)
		v.lostRecords++
	}
}

// leaderElected runs when broker b first leads part in a leader epoch.
// The controller elects among the live brokers (registered in ZooKeeper)
// of the ISR, and a broker whose power failure it never saw (Kafka's
// controller sees no bounce at failover, nor before the old session
// expires) may still be there, even alone: the others left the ISR when
// their sessions expired. So an acknowledged record that neither the new
// leader nor a live member of its ISR holds was lost with the power
// failures, as Kafka would lose it; if a live member holds it, the
// election chose wrong and the final check reports it.
func (v *invariants) leaderElected(b *Broker, part int32) {
	c := v.c
	ps, ok := v.storedState(part)
	if !ok {
		return
	}
	if c.cons != nil && part < c.cfg.Partitions {
		c.cons.noteLossEvent(part, func(o *Broker) bool { // reads_lost.go
			return o == b || slices.Contains(ps.ISR, o.id) && o.up && o.registered
		})
	}
	recs := v.acked[part]
	kept := recs[:0]
	for _, a := range recs {
		if holds(b, part, a.offset, a.epoch) || v.heldLive(ps.ISR, part, a.offset, a.epoch) {
			kept = append(kept, a)
			continue
		}
		v.lostRecords++
		c.idem.lost(a.value)
		c.sched.Tracef("p%d: acknowledged %s at offset %d (epoch %d) lost by power failures: no live member of ISR %v holds it when broker %d leads", part, a.value, a.offset, a.epoch, ps.ISR, b.id)
	}
	if len(kept) < len(recs) {
		v.forgetReads(part)
	}
	v.acked[part] = kept
	if !slices.Contains(c.coordParts(), part) {
		return
	}
	top, ok := v.maxHW[part]
	if !ok || top.hw == 0 || holds(b, part, top.hw-1, top.epoch) || v.heldLive(ps.ISR, part, top.hw-1, top.epoch) {
		return
	}
	c.sched.Tracef("p%d: coordinator records below HW %d lost by power failures: no live member of ISR %v holds them when broker %d leads; the coordinator's state is forgotten", part, top.hw, ps.ISR, b.id)
	v.forgetCoordinatorState(part)
	delete(v.maxHW, part)
	v.lostRecords++
}

// forgetReads drops what the consumers read of part once records below
// its HW were lost as Kafka would lose them: their offsets are written
// again with other records. The consumers read the partition again from
// its start, so the checks hold for what it holds from now on.
func (v *invariants) forgetReads(part int32) {
	w := v.c.cons
	if w == nil {
		return
	}
	for _, val := range w.seen[part] {
		delete(w.seenAt, val)
	}
	w.seen[part] = map[int64]string{}
	for _, cs := range w.consumers {
		if cs.part == part {
			cs.got, cs.passed, cs.pos = map[int64]bool{}, map[int64]readInfo{}, 0
			cs.seq++ // an answer in flight read the lost records
		}
	}
	v.c.sched.Tracef("p%d: the consumers forget what they read and start again", part)
}

// coordParts are the coordinators' partitions: the offsets partition
// when groups run, __transaction_state when transactions do (the same
// partition unless both do).
func (c *Cluster) coordParts() []int32 {
	var parts []int32
	if c.cfg.Groups > 0 {
		parts = append(parts, c.offsetsPart())
	}
	if c.txns != nil && !slices.Contains(parts, c.txns.txnPart()) {
		parts = append(parts, c.txns.txnPart())
	}
	return parts
}

// forgetCoordinatorState runs when a coordinator's partition (the offsets
// partition, or __transaction_state) lost records below its HW as Kafka
// would lose them.
func (v *invariants) forgetCoordinatorState(part int32) {
	c := v.c
	if c.cfg.Groups > 0 && part == c.offsetsPart() {
		v.forgetCommits()
		if c.txns != nil {
			c.txns.offsetsLost() // txn_offsets.go
		}
	}
	if c.txns != nil && part == c.txns.txnPart() {
		c.txns.stateLost()
	}
}

// forgetCommits drops the acknowledged commits of simple consumers and
// group members alike, and the members' synced generations: the offsets
// partition lost them, and the group's metadata, as Kafka would; its
// coordinator starts the group again at generation 1.
func (v *invariants) forgetCommits() {
	clear(v.committed)
	if w := v.c.members; w != nil {
		clear(w.committed)
		clear(w.syncLeader)
		w.synced = nil
	}
}

// heldLive reports whether a broker of isr, up and registered, holds
// offset in epoch.
func (v *invariants) heldLive(isr []int32, part int32, offset int64, epoch int32) bool {
	for _, o := range v.c.brokers {
		if slices.Contains(isr, o.id) && o.up && o.registered && o.logs != nil && holds(o, part, offset, epoch) {
			return true
		}
	}
	return false
}

// heldInISR reports whether a broker of isr holds offset in epoch: in its
// running log, or, when down, in the log recovered from its disk.
func (v *invariants) heldInISR(isr []int32, part int32, offset int64, epoch int32) bool {
	for _, b := range v.c.brokers {
		if slices.Contains(isr, b.id) && b.logs != nil && holds(b, part, offset, epoch) {
			return true
		}
	}
	return false
}

// staleInISR: broker b is up, but its place in ps's ISR was given to an
// earlier incarnation: it has not registered yet, or registered after ps
// was written, or the controller has not seen its new registration yet
// (and so still accepts a leader's ISR change naming the earlier
// incarnation's broker epoch, KIP-903, which it refuses once it knows
// the new one). The controller drops it once it sees the bounce
// (controller ClusterState.reelect and bouncedSince); until then its
// log, which a power failure may have cut, is not checked against the
// leader's.
func (c *Cluster) staleInISR(b *Broker, ps storedPSView) bool {
	if !b.registered || (ps.mzxid > 0 && b.brokerEpoch > ps.mzxid) {
		return true
	}
	active := c.activeState()
	return active == nil || active.Live[b.id].Epoch != b.brokerEpoch
}

// activeState is the state of the controller of the highest epoch among
// the brokers up, nil when none controls.
func (c *Cluster) activeState() *controller.ClusterState {
	var active *controller.ClusterState
	for _, o := range c.brokers {
		if !o.up || o.ctrl == nil {
			continue
		}
		if s := o.ctrl.state(); s != nil && (active == nil || s.Epoch > active.Epoch) {
			active = s
		}
	}
	return active
}

// storedPSView is what staleInISR needs of a stored state.
type storedPSView struct{ mzxid int64 }

// highWater is the highest HW a leader of a partition reached, with the
// epoch of the record below it.
type highWater struct {
	hw    int64
	epoch int32
}

// receivedBeforeCrash reports whether broker b held offset in epoch when
// one of its power failures hit. acks=all counts the replicas that received
// a record, as Kafka's leader does from their fetches: a follower that
// received it and then lost it in a crash the leader has not heard of yet
// still counts, and the record's durability rests on the others.
func receivedBeforeCrash(b *Broker, part int32, offset int64, epoch int32) bool {
	for _, m := range append([]*log.Manager{b.beforeCrash}, b.earlierCrashes...) {
		if m == nil {
			continue
		}
		if l := m.Get(log.TopicPartition{Topic: topic, Partition: part}); l != nil && l.LogEndOffset() > offset && l.LeaderEpochAt(offset) == epoch {
			return true
		}
	}
	return false
}

// servesControl applies a LeaderAndISR as Brook's broker takes it. A
// broker serves requests only once registered (broker.Run registers
// before its listeners accept: the channel's delivery checks it), so a
// restarted broker waiting for its previous session to expire answers
// nothing; and a request meant for an earlier registration (its broker
// epoch below the current one) is answered STALE_BROKER_EPOCH and not
// applied (broker.staleBrokerEpoch). Without these a broker restarted
// with a log cut by a power failure took the leadership its previous
// incarnation was given.
func (b *Broker) servesControl(req *kmsg.LeaderAndISRRequest) {
	if req.BrokerEpoch == -1 || req.BrokerEpoch >= b.brokerEpoch {
		b.onLeaderAndISR(req)
	} else {
		b.c.sched.Tracef("broker %d: LeaderAndISR for broker epoch %d, stale (now %d)", b.id, req.BrokerEpoch, b.brokerEpoch)
	}
}
