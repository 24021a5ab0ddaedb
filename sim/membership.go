package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/group"
)

// The group membership workload (with the group workload, even seeds):
// consumers in one group join (JoinGroup, the real two-step join of v4+
// with MEMBER_ID_REQUIRED), sync (the leader assigns), heartbeat, commit
// with their generation and member id, leave (LeaveGroup), or fall silent
// past their session timeout, through the real group.Coordinator's
// membership path: StartJoinGroup and StartSyncGroup, polled after every
// event, and Coordinator.Tick for the session, join and sync deadlines.
// A member talks to a broker that believes it leads the offsets
// partition, and starts over on the errors a Kafka consumer starts over
// on.
//
// Invariants: one leader per generation (every member whose SyncGroup
// succeeded in a generation was told the same leader); a commit with a
// generation older than one whose SyncGroup had already succeeded when
// the commit was sent is refused (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID
// or REBALANCE_IN_PROGRESS), as a member fenced by a rebalance must be;
// committed offsets never regress (an OffsetFetch at the offsets
// partition's leader, in ZooKeeper and at its epoch, never shows less
// than an acknowledged commit, and after the quiet phase it shows every
// one).

const (
	membersGroup       = "members"
	membersCount       = 3
	memberSession      = 6 * time.Second // session.timeout.ms (group.min.session.timeout.ms is 6 s)
	memberRebalance    = 3 * time.Second // max.poll.interval.ms, shortened
	memberHeartbeat    = time.Second     // heartbeat.interval.ms, shortened
	memberRetryBackoff = 100 * time.Millisecond
	// memberRequestTimeout bounds a request's answer; a join waits for
	// the rebalance too.
	memberRequestTimeout = time.Second
	// membersPartition0 is the committed topic's partition of member slot 0.
	membersPartition0 = 100
)

type memberState int

const (
	memberIdle memberState = iota
	memberJoining
	memberSyncing
	memberStable
	memberAway
)

type groupMember struct {
	slot   int
	id     string
	gen    int32
	leader string
	state  memberState
	// run invalidates the callbacks of an earlier round when the member
	// starts over.
	run        int
	commitBusy bool
	// slow: the member is late to rejoin a rebalance and goes on committing.
	slow bool
	// next is the last offset the member sent in a commit.
	next int64
}

type membershipWorkload struct {
	c       *Cluster
	members []*groupMember
	// polls are joins and syncs waiting in a coordinator.
	polls []memberPoll
	// syncLeader is each generation's leader, syncedAt when its first
	// SyncGroup succeeded, from the coordinator's answers.
	syncLeader map[int32]string
	synced     []syncedGen
	// committed is the highest acknowledged offset per slot.
	committed map[int]int64
	ids       int
	joins     int
	commits   int
	fenced    int
}

type syncedGen struct {
	gen int32
	at  time.Time
}

type memberPoll struct {
	b    *Broker
	inc  int
	poll func() bool // true once answered
}

func newMembershipWorkload(c *Cluster) *membershipWorkload {
	w := &membershipWorkload{c: c, syncLeader: map[int32]string{}, committed: map[int]int64{}}
	for i := range membersCount {
		w.members = append(w.members, &groupMember{slot: i})
	}
	return w
}

// newMemberID makes member ids from a cluster-wide counter, so that a
// seed replays (Kafka's are random uuids).
func (w *membershipWorkload) newMemberID(prefix string) string {
	w.ids++
	return fmt.Sprintf("%s-%d", prefix, w.ids)
}

func (w *membershipWorkload) schedule() {
	for _, m := range w.members {
		w.c.sched.After(w.c.sched.Between(time.Second, 2*time.Second), fmt.Sprintf("member %d starts", m.slot), func() { w.join(m) })
	}
}

// tick is one round of the coordinator's Run on broker b when a deadline
// may be due: Coordinator.Tick fires what is due at the virtual now and
// returns the next deadline (nil-safe: no members, no deadlines).
func (w *membershipWorkload) tick(b *Broker) {
	if w == nil {
		return
	}
	now := w.c.sched.Now()
	if !b.tickAt.IsZero() && now.Before(b.tickAt) {
		return
	}
	next := b.coord.Tick()
	if next.IsZero() {
		next = now.Add(time.Hour) // none: a request arms it again
	}
	b.tickAt = next
}

// arrived marks that a request reached b's coordinator: its deadlines
// may have moved earlier, so the next round ticks.
func arrived(b *Broker) { b.tickAt = time.Time{} }

// step polls the pending joins and syncs, after the coordinators' Step.
func (w *membershipWorkload) step() {
	kept := w.polls[:0]
	for _, p := range w.polls {
		if !p.b.live(p.inc) {
			continue // the coordinator went with its broker: the client times out
		}
		if !p.poll() {
			kept = append(kept, p)
		}
	}
	w.polls = kept
}

// coordinator picks a broker that believes it leads the offsets partition
// (FindCoordinator with fresh or stale metadata).
func (w *membershipWorkload) coordinator() (*Broker, bool) {
	leaders := w.c.believedLeaders(w.c.offsetsPart())
	if len(leaders) == 0 {
		return nil, false
	}
	return leaders[w.c.sched.Rand.Intn(len(leaders))], true
}

// restart starts m's next round after d: the callbacks of this one are void.
func (w *membershipWorkload) restart(m *groupMember, d time.Duration, why string) {
	m.run++
	m.state, m.commitBusy, m.slow = memberIdle, false, false
	run := m.run
	if why != "" {
		w.c.sched.Tracef("member %d (%s, generation %d) rejoins: %s", m.slot, m.id, m.gen, why)
	}
	w.c.sched.After(d, "~member rejoins", func() {
		if m.run == run {
			w.join(m)
		}
	})
}

// timeout restarts m if the round is still run and in state s after d.
func (w *membershipWorkload) timeout(m *groupMember, run int, s memberState, d time.Duration) {
	w.c.sched.After(d, "~member request timeout", func() {
		if m.run == run && m.state == s {
			w.restart(m, 0, "request timed out")
		}
	})
}

func (w *membershipWorkload) join(m *groupMember) {
	c := w.c
	if m.state != memberIdle {
		return
	}
	b, ok := w.coordinator()
	if !ok {
		w.restart(m, memberRetryBackoff, "")
		return
	}
	m.state = memberJoining
	run, inc := m.run, b.incarnation
	w.timeout(m, run, memberJoining, memberRebalance+memberRequestTimeout)
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID = 5, membersGroup, m.id
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(memberSession.Milliseconds()), int32(memberRebalance.Milliseconds())
	req.ProtocolType = "consumer"
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name, proto.Metadata = "range", []byte{}
	req.Protocols = append(req.Protocols, proto)
	c.net.Send(clientNode, b.id, "JoinGroup", func() {
		if !b.live(inc) {
			return
		}
		arrived(b)
		pj := b.coord.StartJoinGroup(group.WithClientInfo(context.Background(), fmt.Sprintf("member%d", m.slot), "client"), req)
		w.polls = append(w.polls, memberPoll{b: b, inc: inc, poll: func() bool {
			resp := pj.Poll()
			if resp == nil {
				return false
			}
			c.net.Send(b.id, clientNode, "JoinGroup answer", func() {
				if m.run == run && m.state == memberJoining {
					w.onJoin(m, b, resp)
				}
			})
			return true
		}})
	})
}

func (w *membershipWorkload) onJoin(m *groupMember, b *Broker, resp *kmsg.JoinGroupResponse) {
	switch resp.ErrorCode {
	case 0:
	case kerr.MemberIDRequired.Code:
		m.id = resp.MemberID
		w.restart(m, 0, "")
		return
	case kerr.UnknownMemberID.Code:
		m.id = ""
		w.restart(m, memberRetryBackoff, "join: UNKNOWN_MEMBER_ID")
		return
	default:
		w.restart(m, memberRetryBackoff, fmt.Sprintf("join: error %d", resp.ErrorCode))
		return
	}
	w.joins++
	m.id, m.gen, m.leader = resp.MemberID, resp.Generation, resp.LeaderID
	w.sync(m, b, resp)
}

func (w *membershipWorkload) sync(m *groupMember, b *Broker, join *kmsg.JoinGroupResponse) {
	c := w.c
	m.state = memberSyncing
	run, inc := m.run, b.incarnation
	w.timeout(m, run, memberSyncing, memberRebalance+memberRequestTimeout)
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.Generation, req.MemberID = 3, membersGroup, m.gen, m.id
	if m.leader == m.id {
		for _, jm := range join.Members {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID, a.MemberAssignment = jm.MemberID, []byte(jm.MemberID)
			req.GroupAssignment = append(req.GroupAssignment, a)
		}
	}
	gen, leader := m.gen, m.leader
	c.net.Send(clientNode, b.id, "SyncGroup", func() {
		if !b.live(inc) {
			return
		}
		arrived(b)
		ps := b.coord.StartSyncGroup(req)
		w.polls = append(w.polls, memberPoll{b: b, inc: inc, poll: func() bool {
			resp := ps.Poll()
			if resp == nil {
				return false
			}
			if resp.ErrorCode == 0 {
				w.onSynced(gen, leader)
			}
			c.net.Send(b.id, clientNode, "SyncGroup answer", func() {
				if m.run == run && m.state == memberSyncing {
					w.onSync(m, resp)
				}
			})
			return true
		}})
	})
}

// onSynced records a generation's successful SyncGroup as the coordinator
// answers it: its assignment is committed in the offsets partition.
func (w *membershipWorkload) onSynced(gen int32, leader string) {
	if l, ok := w.syncLeader[gen]; ok && l != leader {
		w.c.fail("%s: generation %d has two leaders: %s and %s", membersGroup, gen, l, leader)
		return
	}
	if _, ok := w.syncLeader[gen]; !ok {
		w.syncLeader[gen] = leader
		w.synced = append(w.synced, syncedGen{gen, w.c.sched.Now()})
		w.c.sched.Tracef("%s: generation %d synced (leader %s)", membersGroup, gen, leader)
	}
}

func (w *membershipWorkload) onSync(m *groupMember, resp *kmsg.SyncGroupResponse) {
	if w.fence(m, resp.ErrorCode, "sync") {
		return
	}
	if resp.ErrorCode != 0 {
		w.restart(m, memberRetryBackoff, fmt.Sprintf("sync: error %d", resp.ErrorCode))
		return
	}
	m.state = memberStable
	run := m.run
	w.c.sched.After(memberHeartbeat, "~member heartbeat", func() { w.heartbeat(m, run) })
	w.c.sched.After(w.c.sched.Between(50*time.Millisecond, 300*time.Millisecond), "~member commits", func() { w.work(m, run) })
}

// fence handles the errors that end a member's generation: it rejoins
// (with a new member id after UNKNOWN_MEMBER_ID).
func (w *membershipWorkload) fence(m *groupMember, code int16, what string) bool {
	switch code {
	case kerr.RebalanceInProgress.Code, kerr.IllegalGeneration.Code:
	case kerr.UnknownMemberID.Code:
		m.id = ""
	default:
		return false
	}
	w.restart(m, 0, fmt.Sprintf("%s: %s", what, kerr.ErrorForCode(code)))
	return true
}

func (w *membershipWorkload) heartbeat(m *groupMember, run int) {
	c := w.c
	if m.run != run || m.state != memberStable {
		return
	}
	c.sched.After(memberHeartbeat, "~member heartbeat", func() { w.heartbeat(m, run) })
	b, ok := w.coordinator()
	if !ok {
		return
	}
	inc := b.incarnation
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version, req.Group, req.Generation, req.MemberID = 3, membersGroup, m.gen, m.id
	c.net.Send(clientNode, b.id, "Heartbeat", func() {
		if !b.live(inc) {
			return
		}
		arrived(b)
		code := b.coord.Heartbeat(context.Background(), req).ErrorCode
		c.net.Send(b.id, clientNode, "Heartbeat answer", func() {
			if m.run != run || m.state != memberStable || m.slow {
				return
			}
			if code == kerr.RebalanceInProgress.Code && c.sched.Chance(0.3) {
				// A consumer stuck in its processing (past
				// max.poll.interval.ms) rejoins late: the rebalance goes
				// on without it, and it commits with its old generation.
				m.slow = true
				c.sched.Tracef("member %d (%s, generation %d) is slow to rejoin", m.slot, m.id, m.gen)
				c.sched.After(memberRebalance+c.sched.Between(500*time.Millisecond, 1500*time.Millisecond), "slow member rejoins", func() {
					if m.run == run {
						w.restart(m, 0, "slow member's turn")
					}
				})
				return
			}
			w.fence(m, code, "heartbeat")
		})
	})
}

// work is a stable member's loop: commit the next offset of its slot (one
// at a time), fetch it back, leave, or fall silent.
func (w *membershipWorkload) work(m *groupMember, run int) {
	c := w.c
	if m.run != run || m.state != memberStable {
		return
	}
	quiet := c.quiet && c.sched.Now().After(simStart.Add(c.cfg.Duration+c.cfg.Settle/2))
	switch k := c.sched.Rand.Intn(100); {
	case quiet:
		return // the last commits have time to be answered
	case k < 2 && !c.quiet: // leave, come back as a new member
		w.leave(m)
		return
	case k < 3 && !c.quiet: // silent past the session timeout (a long GC pause)
		m.run++
		m.state = memberAway
		c.sched.Tracef("member %d (%s) falls silent", m.slot, m.id)
		c.sched.After(memberSession+c.sched.Between(0, 2*time.Second), "member wakes up", func() { w.restart(m, 0, "woke up") })
		return
	case k < 20:
		w.fetchOffsets(m)
	case !m.commitBusy:
		w.commit(m, run)
	}
	c.sched.After(c.sched.Between(50*time.Millisecond, 300*time.Millisecond), "~member commits", func() { w.work(m, run) })
}

func (w *membershipWorkload) leave(m *groupMember) {
	c := w.c
	id := m.id
	m.run++
	m.state, m.id = memberAway, ""
	c.sched.Tracef("member %d (%s) leaves", m.slot, id)
	if b, ok := w.coordinator(); ok {
		inc := b.incarnation
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group = 3, membersGroup
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = id
		req.Members = append(req.Members, lm)
		c.net.Send(clientNode, b.id, "LeaveGroup", func() {
			if b.live(inc) {
				arrived(b)
				b.coord.LeaveGroup(context.Background(), req)
			}
		})
	}
	c.sched.After(c.sched.Between(500*time.Millisecond, 3*time.Second), "member comes back", func() { w.restart(m, 0, "") })
}

func (w *membershipWorkload) commit(m *groupMember, run int) {
	c := w.c
	b, ok := w.coordinator()
	if !ok {
		return
	}
	inc := b.incarnation
	m.commitBusy = true
	m.next++
	offset, gen, sent := m.next, m.gen, c.sched.Now()
	c.sched.After(commitRequestTimeout, "~member commit timeout", func() {
		if m.run == run && m.next == offset {
			m.commitBusy = false
		}
	})
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation, req.MemberID = 8, membersGroup, gen, m.id
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = committedTopic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = int32(membersPartition0+m.slot), offset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	c.net.Send(clientNode, b.id, "OffsetCommit (member)", func() {
		if !b.live(inc) {
			return
		}
		arrived(b)
		pc := pendingCommit{pc: b.coord.StartOffsetCommit(req), inc: inc, group: membersGroup, offset: offset,
			answer: func(code int16) {
				if code == 0 {
					w.acked(m, gen, sent, offset)
				}
				c.net.Send(b.id, clientNode, "OffsetCommit (member) answer", func() {
					if m.run == run && m.next == offset {
						m.commitBusy = false
					}
					if m.run == run && m.state == memberStable {
						w.fence(m, code, "commit")
					}
				})
			}}
		if pc.pc.Done() == nil {
			c.answerCommit(b, pc)
			return
		}
		b.commits = append(b.commits, pc)
	})
}

// acked checks an acknowledged commit against the generations synced
// before it was sent, and records it.
func (w *membershipWorkload) acked(m *groupMember, gen int32, sent time.Time, offset int64) {
	c := w.c
	w.commits++
	for _, sg := range w.synced {
		if sg.gen > gen && sg.at.Before(sent) {
			c.fail("%s: commit of %d by member %d with generation %d acknowledged, but generation %d had synced at %.3fs, before it was sent at %.3fs",
				membersGroup, offset, m.slot, gen, sg.gen, sg.at.Sub(simStart).Seconds(), sent.Sub(simStart).Seconds())
			return
		}
	}
	if offset > w.committed[m.slot] {
		w.committed[m.slot] = offset
	}
}

// fetchOffsets fetches the group's offsets and checks them as offsetFetch
// does the simple consumers'; final: after the quiet phase, at the leader,
// where the fetch must succeed.
func (w *membershipWorkload) fetchOffsets(m *groupMember) {
	b, ok := w.coordinator()
	if !ok {
		return
	}
	inc := b.incarnation
	w.c.net.Send(clientNode, b.id, "OffsetFetch (members)", func() { w.checkOffsets(b, inc, false) })
}

func (w *membershipWorkload) checkOffsets(b *Broker, inc int, final bool) {
	c := w.c
	if !b.live(inc) {
		return
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group = 7, membersGroup
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic = committedTopic
	for i := range membersCount {
		t.Partitions = append(t.Partitions, int32(membersPartition0+i))
	}
	req.Topics = append(req.Topics, t)
	resp := b.coord.OffsetFetch(context.Background(), req)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
		if final {
			c.fail("%s: OffsetFetch at leader %d after the quiet phase: error %d", membersGroup, b.id, resp.ErrorCode)
		}
		return
	}
	ps, _, ok := c.zkOffsetsLeader(b)
	if !ok {
		return // a deposed coordinator may answer older offsets, as in Kafka
	}
	for _, rp := range resp.Topics[0].Partitions {
		slot := int(rp.Partition - membersPartition0)
		if rp.ErrorCode != 0 {
			if final {
				c.fail("%s: OffsetFetch of slot %d at leader %d after the quiet phase: error %d", membersGroup, slot, b.id, rp.ErrorCode)
			}
			return
		}
		if want, ok := w.committed[slot]; ok && rp.Offset < want {
			c.fail("%s: coordinator %d (leader epoch %d) answers offset %d for member slot %d, but the commit of %d was acknowledged",
				membersGroup, b.id, ps.LeaderEpoch, rp.Offset, slot, want)
			return
		}
	}
}

// final fetches the group's offsets from the offsets partition's leader.
func (w *membershipWorkload) final() {
	c := w.c
	ps, ok := c.inv.storedState(c.offsetsPart())
	if !ok || ps.Leader < 0 {
		return // invariants.final reports it
	}
	b := c.brokers[ps.Leader-1]
	w.checkOffsets(b, b.incarnation, true)
}
