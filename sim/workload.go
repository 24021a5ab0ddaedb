package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/brook-mq/brook/controller"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The workload: one idempotent acks=all producer (idempotent.go)
// writing small records to leaders, and faults: crashes and restarts,
// ZooKeeper disconnections long enough (or not) to expire sessions, and
// network partitions between brokers.

// believedLeaders are the brokers up that believe they lead part: where a
// client with metadata, fresh or stale, sends to. A broker that is no
// longer a replica of part is left out: a reassignment removed it and the
// controller that was to stop it failed over first (Kafka leaves such a
// stray replica too, believing it leads), and no metadata a client
// refreshes after its errors names it.
func (c *Cluster) believedLeaders(part int32) []*Broker {
	var leaders []*Broker
	for _, b := range c.brokers {
		if b.up {
			if p := b.rm.Get(topic, part); p != nil && p.IsLeader() && c.isReplica(part, b.id) {
				leaders = append(leaders, b)
			}
		}
	}
	return leaders
}

// isReplica reports whether ZooKeeper's assignment of the topic has id
// among part's replicas (true when it cannot be read).
func (c *Cluster) isReplica(part, id int32) bool {
	if c.assignment.writes != c.zk.writes || !c.assignment.read {
		a, err := controller.ReadTopic(context.Background(), c.admin, topic)
		c.assignment.writes, c.assignment.read, c.assignment.a = c.zk.writes, err == nil, a
	}
	rs, ok := c.assignment.a.Partitions[part]
	return !c.assignment.read || !ok || slices.Contains(rs, id)
}

// produce is the leader's side of an acks=all Produce of the idempotent
// producer: the real Partition.AppendAsLeaderInTerm (the log's producer
// state answers a duplicate with the original offsets), then a wait that
// invariants.check polls with the real Partition.WaitForCommit; answer
// gets the error code, or 0 and the offset once committed. A broker that
// is down answers nothing.
func (c *Cluster) produce(b *Broker, inc int, part int32, data []byte, values []string, answer func(code int16, offset int64)) {
	if !b.live(inc) {
		return
	}
	p := b.rm.Get(topic, part)
	if p == nil {
		answer(kerr.NotLeaderForPartition.Code, -1)
		return
	}
	info, term, err := p.AppendAsLeaderInTerm(data, -1, c.cfg.MinISR)
	if err != nil {
		answer(produceCode(err), -1) // idempotent.go
		return
	}
	if info.Duplicate {
		c.idem.duplicates++
		c.sched.Tracef("p%d: broker %d answers %v as a duplicate at offset %d", part, b.id, values, info.FirstOffset)
	}
	for i, v := range values {
		off := info.FirstOffset + int64(i)
		a := pendingAck{b: b, inc: inc, part: part, offset: off, term: term, epoch: p.Log().LeaderEpochAt(off), value: v, dup: info.Duplicate}
		if i == len(values)-1 {
			a.onAck = func() { answer(0, info.FirstOffset) }
		}
		c.inv.appended(a)
	}
}

// scheduleFaults injects a fault every 0.3-2 s of the faulty phase.
func (c *Cluster) scheduleFaults() {
	var next func()
	next = func() {
		if c.quiet {
			return
		}
		c.fault()
		c.sched.After(c.sched.Between(300*time.Millisecond, 2*time.Second), "fault", next)
	}
	c.sched.After(c.sched.Between(time.Second, 2*time.Second), "fault", next)
}

func (c *Cluster) fault() {
	b := c.brokers[c.sched.Rand.Intn(len(c.brokers))]
	switch k := c.sched.Rand.Intn(10); {
	case k < 3: // crash or controlled shutdown, restart in 0.5-10 s
		if !b.up {
			return
		}
		down := 0
		for _, o := range c.brokers {
			if !o.up || o.shuttingDown {
				down++
			}
		}
		if down+1 >= len(c.brokers) {
			return // keep one broker up
		}
		restart := c.sched.Between(500*time.Millisecond, 10*time.Second)
		if c.cfg.ControlledShutdowns && c.sched.Chance(0.5) {
			b.controlledShutdown(restart) // shutdown.go
			return
		}
		b.crash()
		c.sched.After(restart, fmt.Sprintf("restart broker %d", b.id), b.start)
	case k < 5: // cut from ZooKeeper for 1-2x the session timeout
		if !b.up || !b.sess.Connected() {
			return
		}
		sess, inc := b.sess, b.incarnation
		sess.SetConnected(false)
		c.sched.Tracef("zk: broker %d disconnected", b.id)
		c.sched.After(c.sched.Between(c.cfg.SessionTimeout/2, 2*c.cfg.SessionTimeout), fmt.Sprintf("zk: broker %d reconnects", b.id), func() {
			if b.live(inc) && b.sess == sess { // a crashed broker's session stays cut
				sess.SetConnected(true)
			}
		})
	case k < 6: // session expiry at once (ZooKeeper's server-side expiry)
		if b.up {
			b.sess.Expire()
		}
	case k < 8: // partition two brokers
		o := c.brokers[c.sched.Rand.Intn(len(c.brokers))]
		if o != b {
			c.net.Partition(b.id, o.id)
		}
	default:
		c.net.Heal()
	}
}

// beginQuiet ends the faults: links heal, sessions reconnect, every
// broker comes back.
func (c *Cluster) beginQuiet() {
	c.quiet = true
	c.net.Heal()
	for _, b := range c.brokers {
		if b.up {
			b.sess.SetConnected(true)
		} else {
			b.start()
		}
	}
}
