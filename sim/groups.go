package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/group"
	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/replica"
)

// The group workload: the real group coordinator (group.Coordinator) on
// every broker, leading the groups of the offsets partition (the last
// partition of the topic, which the producer does not write) when its
// broker leads that partition, as broker/groups.go wires it. Simple
// consumers (no group management) commit ever larger offsets to a few
// groups and fetch them back; a fetch answered by the partition's current
// leader must never show less than a commit already acknowledged to its
// client.

// commitRequestTimeout is how long a consumer waits for a commit's answer
// before it sends the next: far above the network's delay, so that the
// previous commit reached the coordinator first and is before it in the
// log (the coordinator's queue is in arrival order).
const commitRequestTimeout = time.Second

// committedTopic is the topic the consumers commit offsets for (partition 0).
const committedTopic = "consumed"

// simOffsets is the offsets partition as the coordinator sees it: the real
// replica.Partition, appended to as broker/groups.go's offsetsPartition
// does (acks=all, min.insync.replicas), with the wait for the commit
// polled by the driver (stepGroups) instead of blocking. It is comparable
// and equal for the same hosted partition of one incarnation.
type simOffsets struct {
	b   *Broker
	inc int
	p   *replica.Partition
}

func (o simOffsets) Append(context.Context, []byte) (int64, error) {
	return -1, errors.New("sim: Append blocks; the coordinator calls AppendAsync")
}

func (o simOffsets) AppendAsync(data []byte, done func(int64, error)) {
	info, term, err := o.p.AppendAsCoordinatorInTerm(data, -1, o.b.c.cfg.MinISR)
	if err != nil {
		done(-1, err)
		return
	}
	o.b.appends = append(o.b.appends, pendingAppend{p: o.p, end: info.LastOffset + 1, term: term, base: info.FirstOffset, done: done})
}

func (o simOffsets) Read(offset int64, maxBytes int32) ([]byte, error) {
	l := o.p.Log()
	s, err := l.Read(offset, maxBytes, l.LogEndOffset(), true)
	if err != nil || s.Size == 0 {
		return nil, err
	}
	return s.ReadInto(make([]byte, 0, s.Size))
}

func (o simOffsets) LogStartOffset() int64 { return o.p.Log().LogStartOffset() }
func (o simOffsets) LogEndOffset() int64   { return o.p.Log().LogEndOffset() }

// HighWatermark is read by the coordinators' loads: they act on what they
// read once the HW reaches it (and group.Faults.LoadToHighWatermark reads
// only up to it).
func (o simOffsets) HighWatermark() int64 { return o.p.HighWatermark() }

// WaitForHighWatermark is the goroutine drivers' wait; the step drivers
// poll HighWatermark instead, so it is never called here.
func (o simOffsets) WaitForHighWatermark(context.Context, int64) error {
	panic("sim: the coordinators' partitions are AsyncPartitions; their loads poll HighWatermark at each Step")
}

// pendingAppend is a coordinator append waiting to be committed.
type pendingAppend struct {
	p         *replica.Partition
	end, base int64
	term      int32
	done      func(int64, error)
	err       error
}

// pendingCommit is an OffsetCommit waiting for its append.
type pendingCommit struct {
	pc     *group.PendingCommit
	inc    int
	group  string
	offset int64
	// answer, when set, takes the answer's error code instead of the
	// simple consumers' bookkeeping (membership.go).
	answer func(code int16)
}

// coordListener is broker/groups.go's leadershipListener for the offsets partition.
type coordListener struct {
	b   *Broker
	inc int
}

func (l coordListener) BecameLeader(p *replica.Partition, epoch int32) {
	if tp := p.TopicPartition(); tp.Topic == topic && l.b.c.txns != nil && tp.Partition == l.b.c.txns.txnPart() {
		l.b.c.txns.becameLeader(l.b, l.inc, p, epoch) // the partition is __transaction_state (txn_coordinator.go)
		return
	}
	if tp := p.TopicPartition(); tp.Topic == topic && tp.Partition == l.b.c.offsetsPart() {
		l.b.c.sched.Tracef("broker %d coordinator elected (epoch %d, LEO %d, HW %d)", l.b.id, epoch, p.Log().LogEndOffset(), p.HighWatermark())
		l.b.coord.OnElected(0, epoch, simOffsets{b: l.b, inc: l.inc, p: p})
		l.b.tickAt = time.Time{} // the loaded groups' deadlines
	}
}

func (l coordListener) Resigned(tp log.TopicPartition, epoch int32) {
	if tp.Topic == topic && l.b.c.txns != nil && tp.Partition == l.b.c.txns.txnPart() {
		l.b.c.txns.resigned(l.b, l.inc, epoch)
		return
	}
	if tp.Topic == topic && tp.Partition == l.b.c.offsetsPart() {
		l.b.coord.OnResigned(0, epoch)
	}
}

// newCoordinator is the broker's group coordinator, on the virtual clock;
// its deadlines fire by Coordinator.Tick after every event when members
// join (simple consumers have no sessions).
func (b *Broker) newCoordinator() *group.Coordinator {
	cfg := group.Config{
		BrokerID: b.id, NumPartitions: 1, Now: b.c.sched.Now,
		Logger: slog.New(slog.DiscardHandler), Faults: b.c.cfg.GroupFaults,
	}
	if m := b.c.members; m != nil {
		// Members join (membership.go): ids from the seed, and Kafka's
		// initial rebalance delay, shortened.
		cfg.NewMemberID, cfg.InitialRebalanceDelay = m.newMemberID, 500*time.Millisecond
	}
	return group.New(cfg)
}

// stepGroups runs, after every event, one round of each coordinator's
// partition work and completes the appends now committed (the real
// WaitForCommit, with a done context) and the commits they answer.
func (c *Cluster) stepGroups() {
	if c.cfg.Groups == 0 {
		return
	}
	for _, b := range c.brokers {
		if !b.up {
			continue
		}
		finished := b.completeAppends()
		if c.members != nil && finished > 0 {
			b.tickAt = time.Time{} // a completed write may set a deadline
		}
		c.members.tick(b)
		b.coord.Step()
		keptCommits := b.commits[:0]
		for _, pc := range b.commits {
			select {
			case <-pc.pc.Done():
				c.answerCommit(b, pc)
			default:
				keptCommits = append(keptCommits, pc)
			}
		}
		b.commits = keptCommits
	}
}

// completeAppends completes the coordinator appends now committed (the
// real WaitForCommit, with a done context) and returns how many finished.
func (b *Broker) completeAppends() int {
	c := b.c
	kept := b.appends[:0]
	var finished []pendingAppend
	for _, a := range b.appends {
		err := a.p.WaitForCommit(c.inv.done, a.end, a.term, c.cfg.MinISR)
		if errors.Is(err, context.Canceled) {
			kept = append(kept, a)
			continue
		}
		a.err = err
		finished = append(finished, a)
	}
	b.appends = kept
	for _, a := range finished {
		if a.err != nil {
			a.done(-1, a.err)
		} else {
			a.done(a.base, nil)
		}
	}
	return len(finished)
}

// scheduleGroups runs the consumers: every 5-30 ms one commits the next
// offset of a group or fetches a group's offset, at a broker that
// believes it leads the offsets partition.
func (c *Cluster) scheduleGroups() {
	if c.cfg.Groups == 0 || c.cfg.NoSimpleConsumers {
		return
	}
	var next func()
	next = func() {
		if c.quiet && c.sched.Now().After(simStart.Add(c.cfg.Duration+c.cfg.Settle/2)) {
			return // the last commits have time to be answered
		}
		g := fmt.Sprintf("group-%d", c.sched.Rand.Intn(c.cfg.Groups))
		if leaders := c.believedLeaders(c.offsetsPart()); len(leaders) > 0 {
			b := leaders[c.sched.Rand.Intn(len(leaders))]
			inc := b.incarnation
			// A consumer commits in order, one commit at a time, as on
			// one connection: it sends the next after the answer, or
			// after its request timeout when the answer is lost.
			if c.sched.Chance(0.7) && !c.sched.Now().Before(c.inv.commitBusy[g]) {
				c.inv.commitBusy[g] = c.sched.Now().Add(commitRequestTimeout)
				c.inv.nextOffset[g]++
				offset := c.inv.nextOffset[g]
				c.net.Send(clientNode, b.id, "OffsetCommit", func() { c.offsetCommit(b, inc, g, offset) })
			} else {
				c.net.Send(clientNode, b.id, "OffsetFetch", func() { c.offsetFetch(b, inc, g, false) })
			}
		}
		c.sched.After(c.sched.Between(5*time.Millisecond, 30*time.Millisecond), "~consumers", next)
	}
	c.sched.After(time.Second, "~consumers", next)
}

func (c *Cluster) offsetCommit(b *Broker, inc int, g string, offset int64) {
	if !b.live(inc) {
		return
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, g, -1
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = committedTopic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Offset = offset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	pc := pendingCommit{pc: b.coord.StartOffsetCommit(req), inc: inc, group: g, offset: offset}
	if pc.pc.Done() == nil {
		c.answerCommit(b, pc)
		return
	}
	b.commits = append(b.commits, pc)
}

// answerCommit sends a commit's answer; the commit counts as acknowledged
// when a success arrives at the client.
func (c *Cluster) answerCommit(b *Broker, pc pendingCommit) {
	code := pc.pc.Response(false).Topics[0].Partitions[0].ErrorCode
	if pc.answer != nil {
		pc.answer(code)
		return
	}
	c.net.Send(b.id, clientNode, "OffsetCommit answer", func() {
		if pc.offset == c.inv.nextOffset[pc.group] {
			delete(c.inv.commitBusy, pc.group)
		}
		if code == 0 {
			c.inv.commitsAcked++
		}
		if last, ok := c.inv.committed[pc.group]; code == 0 && (!ok || pc.offset > last) {
			c.inv.committed[pc.group] = pc.offset
		}
	})
}

// offsetFetch serves an OffsetFetch and checks it against the commits
// acknowledged so far, when the broker is the offsets partition's leader
// in ZooKeeper at the epoch it leads in (a deposed coordinator that has
// not heard of its successor may serve older offsets, as in Kafka).
// final: the check at the end, where the fetch must succeed.
func (c *Cluster) offsetFetch(b *Broker, inc int, g string, final bool) {
	if !b.live(inc) {
		return
	}
	got, code := fetchCommitted(b, g, false)
	if code != 0 {
		if final {
			c.fail("%s: OffsetFetch at leader %d after the quiet phase: error %d", g, b.id, code)
		}
		return
	}
	ps, p, ok := c.zkOffsetsLeader(b)
	if !ok {
		return
	}
	if want, ok := c.inv.committed[g]; ok && got < want {
		c.fail("%s: coordinator %d (leader epoch %d, HW %d, LEO %d) answers committed offset %d, but the commit of %d was acknowledged",
			g, b.id, ps.LeaderEpoch, p.HighWatermark(), p.Log().LogEndOffset(), got, want)
	}
}

// fetchCommitted is an OffsetFetch of group g's offset of committedTopic
// partition 0 at b's coordinator: the offset, and the error code of the
// group or the partition.
func fetchCommitted(b *Broker, g string, requireStable bool) (int64, int16) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group, req.RequireStable = 7, g, requireStable
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic, t.Partitions = committedTopic, []int32{0}
	req.Topics = append(req.Topics, t)
	resp := b.coord.OffsetFetch(context.Background(), req)
	code := resp.ErrorCode
	if code != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, code
	}
	rp := resp.Topics[0].Partitions[0]
	return rp.Offset, rp.ErrorCode
}

// zkOffsetsLeader returns the offsets partition's state in ZooKeeper and
// b's replica of it when b leads it as ZooKeeper holds it, at the epoch
// it leads in: the coordinator whose answers are checked (a deposed one
// that has not heard of its successor may answer older offsets, as in
// Kafka).
func (c *Cluster) zkOffsetsLeader(b *Broker) (controller.PartitionState, *replica.Partition, bool) {
	ps, ok := c.inv.storedState(c.offsetsPart())
	p := b.rm.Get(topic, c.offsetsPart())
	if !ok || p == nil || ps.Leader != b.id || p.State().LeaderEpoch != ps.LeaderEpoch {
		return ps, nil, false
	}
	return ps, p, true
}

// finalGroups fetches every group's offset from the offsets partition's leader.
func (c *Cluster) finalGroups() {
	if c.cfg.Groups == 0 || c.cfg.NoSimpleConsumers {
		return
	}
	ps, ok := c.inv.storedState(c.offsetsPart())
	if !ok || ps.Leader < 0 {
		return // final reports a partition without a leader
	}
	b := c.brokers[ps.Leader-1]
	for i := range c.cfg.Groups {
		if c.failure != nil {
			return
		}
		c.offsetFetch(b, b.incarnation, fmt.Sprintf("group-%d", i), true)
	}
}
