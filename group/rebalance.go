package group

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// shard is the pure state of the groups of one __consumer_offsets
// partition. Its methods never do I/O and never read the clock: they take
// now, change the state, and record what must happen outside in effects. The
// driver (Coordinator) serialises all calls on one shard with its lock.
type shard struct {
	partition int32
	limits    limits
	groups    map[string]*group
	// txnOffsets are transactional offset commits awaiting their
	// transaction's marker (txn_offsets.go).
	txnOffsets txnOffsets
	// newMemberID makes member ids; tests replace it to get stable ids.
	newMemberID func(prefix string) string
	// faults are the coordinator's Faults.
	faults Faults
}

func newShard(partition int32, l limits) *shard {
	return &shard{partition: partition, limits: l, groups: map[string]*group{}, newMemberID: randomMemberID}
}

// randomMemberID follows Kafka's "<client.id or group.instance.id>-<uuid>".
func randomMemberID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return prefix + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func resetHeartbeat(m *member, now time.Time) {
	m.heartbeatDeadline = now.Add(m.sessionTimeout)
}

// answerJoin answers the member's outstanding JoinGroup, if any.
func (g *group) answerJoin(m *member, r joinResult, eff *effects) {
	if m.joinWaiter == nil {
		return
	}
	eff.join(m.joinWaiter, r)
	m.joinWaiter = nil
	m.isNew = false
	g.numAwaitingJoin--
}

func (s *shard) maybePrepareRebalance(g *group, now time.Time, eff *effects) {
	if g.canRebalance() {
		s.prepareRebalance(g, now, eff)
	}
}

func (s *shard) prepareRebalance(g *group, now time.Time, eff *effects) {
	if g.state == StateCompletingRebalance {
		s.propagateAssignment(g, kerr.RebalanceInProgress.Code, now, eff)
	}
	clear(g.pendingSync)
	g.syncDeadline = time.Time{}
	if g.state == StateEmpty {
		delay := s.limits.initialRebalanceDelay
		g.joinInitial = true
		g.joinDeadline = now.Add(delay)
		g.joinRemaining = max(g.rebalanceTimeout()-delay, 0)
	} else {
		g.joinInitial = false
		g.joinDeadline = now.Add(g.rebalanceTimeout())
	}
	g.transition(StatePreparingRebalance, now)
	s.tryCompleteJoin(g, now, eff)
}

// tryCompleteJoin ends the join phase when everybody rejoined or the
// deadline passed. The initial delay of a new group always runs out, and is
// extended while members keep arriving, up to the rebalance timeout.
func (s *shard) tryCompleteJoin(g *group, now time.Time, eff *effects) {
	if g.state != StatePreparingRebalance {
		return
	}
	if !g.joinInitial {
		if g.hasAllMembersJoined() || !now.Before(g.joinDeadline) {
			s.completeJoin(g, now, eff)
		}
		return
	}
	for g.state == StatePreparingRebalance && g.joinInitial && !now.Before(g.joinDeadline) {
		if g.newMemberAdded && g.joinRemaining != 0 {
			g.newMemberAdded = false
			delay := min(s.limits.initialRebalanceDelay, g.joinRemaining)
			g.joinRemaining = max(g.joinRemaining-s.limits.initialRebalanceDelay, 0)
			g.joinDeadline = now.Add(delay)
			continue
		}
		s.completeJoin(g, now, eff)
	}
}

func (s *shard) completeJoin(g *group, now time.Time, eff *effects) {
	g.joinInitial = false
	g.joinDeadline = time.Time{}
	g.newMemberAdded = false
	// Dynamic members that did not rejoin in time are gone; static members
	// keep their place and their previous metadata.
	for _, id := range append([]string(nil), g.memberOrder...) {
		m := g.members[id]
		if !m.awaitingJoin() && m.instanceID == "" {
			g.remove(id)
		}
	}
	if g.state == StateDead {
		return
	}
	if !g.maybeElectNewJoinedLeader() && len(g.members) > 0 {
		// Nobody rejoined: wait another round for session timeouts to
		// remove the silent members.
		g.joinDeadline = now.Add(g.rebalanceTimeout())
		return
	}
	g.initNextGeneration(now)
	if g.state == StateEmpty {
		// Losing this write is harmless: an empty generation has no
		// members that could act on it, so nobody waits for it.
		eff.writes = append(eff.writes, write{records: []record{groupMetadataRecord(g, nil)}})
		return
	}
	for _, id := range g.memberOrder {
		m := g.members[id]
		res := joinResult{
			memberID:     m.id,
			generation:   g.generation,
			protocolType: g.protocolType,
			protocolName: g.protocolName,
			leader:       g.leader,
		}
		if g.isLeader(m.id) {
			res.members = g.currentMemberMetadata()
		}
		g.answerJoin(m, res, eff)
		resetHeartbeat(m, now)
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	g.syncDeadline = now.Add(g.rebalanceTimeout())
}

func (g *group) currentMemberMetadata() []joinMember {
	out := make([]joinMember, 0, len(g.members))
	for _, id := range g.memberOrder {
		m := g.members[id]
		out = append(out, joinMember{id: m.id, instanceID: m.instanceID, metadata: m.metadataFor(g.protocolName)})
	}
	return out
}

// propagateAssignment answers every outstanding SyncGroup; an error clears
// the assignments first.
func (s *shard) propagateAssignment(g *group, code int16, now time.Time, eff *effects) {
	for _, id := range g.memberOrder {
		m := g.members[id]
		if code != 0 {
			m.assignment = nil
		}
		if m.syncWaiter == nil {
			continue
		}
		r := syncResult{err: code, assignment: m.assignment}
		if code == 0 {
			r.protocolType, r.protocolName = g.protocolType, g.protocolName
		}
		eff.sync(m.syncWaiter, r)
		m.syncWaiter = nil
		// Expirations ignored while the member waited are re-armed here.
		resetHeartbeat(m, now)
	}
}

// removeMember takes a member out of the group (leave, session expiry) and
// moves the group on: a rebalance, or completing the current join phase.
func (s *shard) removeMember(g *group, m *member, now time.Time, eff *effects) {
	g.answerJoin(m, joinError("", kerr.UnknownMemberID.Code), eff)
	if m.syncWaiter != nil {
		eff.sync(m.syncWaiter, syncResult{err: kerr.UnknownMemberID.Code})
		m.syncWaiter = nil
	}
	g.remove(m.id)
	switch g.state {
	case StateStable, StateCompletingRebalance:
		s.maybePrepareRebalance(g, now, eff)
	case StatePreparingRebalance:
		s.tryCompleteJoin(g, now, eff)
	}
}

func (s *shard) removePending(g *group, id string, now time.Time, eff *effects) {
	g.remove(id)
	if g.state == StatePreparingRebalance {
		s.tryCompleteJoin(g, now, eff)
	}
}

// tick fires every deadline of the group that has passed.
func (s *shard) tick(g *group, now time.Time, eff *effects) {
	for id, deadline := range g.pending {
		if !now.Before(deadline) {
			s.removePending(g, id, now, eff)
		}
	}
	for _, id := range append([]string(nil), g.memberOrder...) {
		m, ok := g.members[id]
		if !ok || m.heartbeatDeadline.IsZero() || now.Before(m.heartbeatDeadline) {
			continue
		}
		if !m.isNew && (m.awaitingJoin() || m.awaitingSync()) {
			// Waiting in a rebalance counts as alive; the deadline is
			// re-armed when the rebalance answers the member.
			m.heartbeatDeadline = time.Time{}
			continue
		}
		s.removeMember(g, m, now, eff)
	}
	if g.state == StatePreparingRebalance {
		s.tryCompleteJoin(g, now, eff)
	}
	if !g.syncDeadline.IsZero() && !now.Before(g.syncDeadline) {
		g.syncDeadline = time.Time{}
		if (g.state == StateCompletingRebalance || g.state == StateStable) && len(g.pendingSync) > 0 {
			for _, id := range append([]string(nil), g.memberOrder...) {
				if g.pendingSync[id] {
					m := g.members[id]
					g.answerJoin(m, joinError("", kerr.UnknownMemberID.Code), eff)
					g.remove(id)
				}
			}
			s.prepareRebalance(g, now, eff)
		}
	}
}

// tickAll advances every group of the shard.
func (s *shard) tickAll(now time.Time, eff *effects) {
	for _, g := range s.groups {
		s.tick(g, now, eff)
	}
}
