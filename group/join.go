package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

type joinArgs struct {
	groupID    string
	memberID   string // "" for a new member
	instanceID string // "" for a dynamic member
	// requireKnownMemberID is KIP-394: JoinGroup v4+ first gets a member
	// id with MEMBER_ID_REQUIRED; older clients join in one round trip.
	requireKnownMemberID bool
	clientID             string
	clientHost           string
	rebalanceTimeout     time.Duration
	sessionTimeout       time.Duration
	protocolType         string
	protocols            []protocol
	// supportSkipAssignment is JoinGroup v9+ (KIP-814).
	supportSkipAssignment bool
	waiter                chan<- joinResult
}

// join handles a JoinGroup. The answer always goes to a.waiter, now or when
// the rebalance completes.
func (s *shard) join(a joinArgs, now time.Time, eff *effects) {
	a.protocols = dedupProtocols(a.protocols)
	if a.sessionTimeout < s.limits.minSessionTimeout || a.sessionTimeout > s.limits.maxSessionTimeout {
		eff.join(a.waiter, joinError(a.memberID, kerr.InvalidSessionTimeout.Code))
		return
	}
	unknown := a.memberID == ""
	g := s.groups[a.groupID]
	if g == nil {
		if !unknown {
			eff.join(a.waiter, joinError(a.memberID, kerr.UnknownMemberID.Code))
			return
		}
		g = newGroup(a.groupID, now)
		s.groups[a.groupID] = g
	}
	switch {
	case !s.acceptJoiningMember(g, a.memberID):
		if m, ok := g.members[a.memberID]; ok {
			g.answerJoin(m, joinError("", kerr.GroupMaxSizeReached.Code), eff)
		}
		g.remove(a.memberID)
		eff.join(a.waiter, joinError("", kerr.GroupMaxSizeReached.Code))
	case unknown:
		s.newMemberJoin(g, a, now, eff)
	default:
		s.currentMemberJoin(g, a, now, eff)
	}
	if g.state == StatePreparingRebalance {
		s.tryCompleteJoin(g, now, eff)
	}
}

// dedupProtocols keeps the first of protocols sharing a name: the protocol
// votes count each member once per name.
func dedupProtocols(ps []protocol) []protocol {
	seen := make(map[string]bool, len(ps))
	out := ps[:0:0]
	for _, p := range ps {
		if !seen[p.name] {
			seen[p.name] = true
			out = append(out, p)
		}
	}
	return out
}

// acceptJoiningMember enforces group.max.size. While preparing a rebalance
// it counts members that rejoined, so that a lowered limit sheds the last
// members to rejoin.
func (s *shard) acceptJoiningMember(g *group, memberID string) bool {
	m, has := g.members[memberID]
	switch g.state {
	case StatePreparingRebalance:
		return (has && m.awaitingJoin()) || g.numAwaitingJoin < s.limits.maxGroupSize
	case StateCompletingRebalance, StateStable:
		return has || len(g.members) < s.limits.maxGroupSize
	}
	return true
}

func (s *shard) newMemberJoin(g *group, a joinArgs, now time.Time, eff *effects) {
	if g.state == StateDead {
		eff.join(a.waiter, joinError("", kerr.CoordinatorNotAvailable.Code))
		return
	}
	if !g.supportsProtocols(a.protocolType, a.protocols) {
		eff.join(a.waiter, joinError("", kerr.InconsistentGroupProtocol.Code))
		return
	}
	if a.instanceID != "" {
		id := s.newMemberID(a.instanceID)
		if old, ok := g.static[a.instanceID]; ok {
			s.updateStaticMember(g, old, id, a, now, eff)
			return
		}
		s.addMember(g, id, a, now, eff)
		return
	}
	id := s.newMemberID(a.clientID)
	if a.requireKnownMemberID {
		g.pending[id] = now.Add(a.sessionTimeout)
		eff.join(a.waiter, joinError(id, kerr.MemberIDRequired.Code))
		return
	}
	s.addMember(g, id, a, now, eff)
}

func (s *shard) addMember(g *group, id string, a joinArgs, now time.Time, eff *effects) {
	m := &member{
		id:               id,
		instanceID:       a.instanceID,
		clientID:         a.clientID,
		clientHost:       a.clientHost,
		rebalanceTimeout: a.rebalanceTimeout,
		sessionTimeout:   a.sessionTimeout,
		protocolType:     a.protocolType,
		protocols:        a.protocols,
		joinWaiter:       a.waiter,
		isNew:            true,
	}
	// Members arriving during a new group's initial delay extend it.
	if g.state == StatePreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m)
	m.heartbeatDeadline = now.Add(newMemberJoinTimeout)
	s.maybePrepareRebalance(g, now, eff)
}

// updateStaticMember handles a known group.instance.id joining with an
// unknown member id: a restart. In a stable group whose protocol choice does
// not change it gets a new member id without a rebalance, once the new id is
// durable.
func (s *shard) updateStaticMember(g *group, oldID, newID string, a joinArgs, now time.Time, eff *effects) {
	currentLeader := g.leader
	m := g.replaceStatic(a.instanceID, oldID, newID, eff)
	resetHeartbeat(m, now)
	oldProtocols, oldRebalance, oldSession := m.protocols, m.rebalanceTimeout, m.sessionTimeout
	g.updateMember(m, a.protocols, a.rebalanceTimeout, a.sessionTimeout, a.waiter, eff)
	switch g.state {
	case StateStable:
		if g.selectProtocol() != g.protocolName {
			s.maybePrepareRebalance(g, now, eff)
			return
		}
		assignment := map[string][]byte{}
		for id, mm := range g.members {
			assignment[id] = mm.assignment
		}
		gen := g.generation
		eff.writes = append(eff.writes, write{
			records: []record{groupMetadataRecord(g, assignment)},
			group:   g.id,
			done: func(s *shard, err error, _ int64, now time.Time, eff *effects) {
				if s.groups[g.id] != g || g.members[newID] != m {
					return
				}
				if err != nil {
					// Undo the replacement so that the old member id
					// stays valid, as it still is in the log.
					waiter := m.joinWaiter
					if waiter != nil {
						m.joinWaiter = nil
						g.numAwaitingJoin--
					}
					g.updateMember(m, oldProtocols, oldRebalance, oldSession, nil, eff)
					g.replaceStatic(a.instanceID, newID, oldID, eff)
					resetHeartbeat(m, now)
					eff.join(waiter, joinResult{
						err: groupErrorCode(err), generation: g.generation,
						protocolType: g.protocolType, protocolName: g.protocolName, leader: currentLeader,
					})
					return
				}
				if a.supportSkipAssignment {
					// JoinGroup v9+ (KIP-814): a restarted leader learns
					// it leads, with the members, but must not run the
					// assignor, whose result a stable group would not
					// distribute.
					r := joinResult{
						memberID: newID, generation: gen,
						protocolType: g.protocolType, protocolName: g.protocolName, leader: g.leader,
					}
					if g.isLeader(newID) {
						r.members, r.skipAssignment = g.currentMemberMetadata(), true
					}
					g.answerJoin(m, r, eff)
					return
				}
				// Before v9 the old leader id is returned on purpose: the
				// new member id does not match it, so a restarted leader
				// does not compute an assignment nobody would receive.
				g.answerJoin(m, joinResult{
					memberID: newID, generation: gen,
					protocolType: g.protocolType, protocolName: g.protocolName, leader: currentLeader,
				}, eff)
			},
		})
	case StateCompletingRebalance:
		// The leader may already be assigning to the old member id.
		s.prepareRebalance(g, now, eff)
	}
}

func (s *shard) currentMemberJoin(g *group, a joinArgs, now time.Time, eff *effects) {
	if g.state == StateDead {
		eff.join(a.waiter, joinError(a.memberID, kerr.CoordinatorNotAvailable.Code))
		return
	}
	if !g.supportsProtocols(a.protocolType, a.protocols) {
		eff.join(a.waiter, joinError(a.memberID, kerr.InconsistentGroupProtocol.Code))
		return
	}
	if _, ok := g.pending[a.memberID]; ok {
		if a.instanceID != "" {
			eff.join(a.waiter, joinError(a.memberID, kerr.UnknownMemberID.Code))
			return
		}
		s.addMember(g, a.memberID, a, now, eff)
		return
	}
	if code := g.validateMember(a.memberID, a.instanceID); code != 0 {
		eff.join(a.waiter, joinError(a.memberID, code))
		return
	}
	m := g.members[a.memberID]
	current := func(withMembers bool) joinResult {
		r := joinResult{
			memberID: a.memberID, generation: g.generation,
			protocolType: g.protocolType, protocolName: g.protocolName, leader: g.leader,
		}
		if withMembers {
			r.members = g.currentMemberMetadata()
		}
		return r
	}
	switch g.state {
	case StatePreparingRebalance:
		g.updateMember(m, a.protocols, a.rebalanceTimeout, a.sessionTimeout, a.waiter, eff)
	case StateCompletingRebalance:
		if m.matches(a.protocols) {
			// A lost JoinGroup response: answer again for this generation.
			eff.join(a.waiter, current(g.isLeader(m.id)))
			return
		}
		g.updateMember(m, a.protocols, a.rebalanceTimeout, a.sessionTimeout, a.waiter, eff)
		s.maybePrepareRebalance(g, now, eff)
	case StateStable:
		// A leader's rejoin forces a rebalance: it is how a consumer
		// reacts to metadata changes that do not change its subscription.
		if g.isLeader(m.id) || !m.matches(a.protocols) {
			g.updateMember(m, a.protocols, a.rebalanceTimeout, a.sessionTimeout, a.waiter, eff)
			s.maybePrepareRebalance(g, now, eff)
			return
		}
		eff.join(a.waiter, current(false))
	default:
		eff.join(a.waiter, joinError(a.memberID, kerr.UnknownMemberID.Code))
	}
}

type syncArgs struct {
	groupID      string
	generation   int32
	memberID     string
	instanceID   string
	protocolType *string // v5+; nil skips the check
	protocolName *string
	assignments  map[string][]byte
	waiter       chan<- syncResult
}

func (s *shard) sync(a syncArgs, now time.Time, eff *effects) {
	reply := func(code int16) { eff.sync(a.waiter, syncResult{err: code}) }
	g := s.groups[a.groupID]
	if g == nil {
		reply(kerr.UnknownMemberID.Code)
		return
	}
	if g.state == StateDead {
		reply(kerr.CoordinatorNotAvailable.Code)
		return
	}
	if code := g.validateMember(a.memberID, a.instanceID); code != 0 {
		reply(code)
		return
	}
	switch {
	case a.generation != g.generation:
		reply(kerr.IllegalGeneration.Code)
		return
	case a.protocolType != nil && *a.protocolType != g.protocolType,
		a.protocolName != nil && *a.protocolName != g.protocolName:
		reply(kerr.InconsistentGroupProtocol.Code)
		return
	}
	m := g.members[a.memberID]
	switch g.state {
	case StateEmpty:
		reply(kerr.UnknownMemberID.Code)
	case StatePreparingRebalance:
		reply(kerr.RebalanceInProgress.Code)
	case StateCompletingRebalance:
		if m.syncWaiter != nil {
			eff.sync(m.syncWaiter, syncResult{err: kerr.RebalanceInProgress.Code})
		}
		m.syncWaiter = a.waiter
		g.removePendingSync(m.id)
		if g.isLeader(m.id) {
			s.storeAssignment(g, a.assignments, eff)
		}
	case StateStable:
		g.removePendingSync(m.id)
		eff.sync(a.waiter, syncResult{protocolType: g.protocolType, protocolName: g.protocolName, assignment: m.assignment})
		resetHeartbeat(m, now)
	}
}

func (g *group) removePendingSync(id string) {
	delete(g.pendingSync, id)
	if len(g.pendingSync) == 0 {
		g.syncDeadline = time.Time{}
	}
}

// storeAssignment persists the leader's assignment; the group becomes Stable
// and members get their assignments only once it is durable.
func (s *shard) storeAssignment(g *group, given map[string][]byte, eff *effects) {
	assignment := make(map[string][]byte, len(g.members))
	for id := range g.members {
		assignment[id] = given[id]
		if assignment[id] == nil {
			assignment[id] = []byte{}
		}
	}
	gen := g.generation
	eff.writes = append(eff.writes, write{
		records: []record{groupMetadataRecord(g, assignment)},
		group:   g.id,
		done: func(s *shard, err error, _ int64, now time.Time, eff *effects) {
			// Another join may have started a new rebalance meanwhile.
			if s.groups[g.id] != g || g.state != StateCompletingRebalance || g.generation != gen {
				return
			}
			if err != nil {
				s.propagateAssignment(g, groupErrorCode(err), now, eff)
				s.maybePrepareRebalance(g, now, eff)
				return
			}
			for id, m := range g.members {
				m.assignment = assignment[id]
			}
			s.propagateAssignment(g, 0, now, eff)
			g.transition(StateStable, now)
		},
	})
}

func (s *shard) heartbeat(groupID, memberID, instanceID string, generation int32, now time.Time) int16 {
	g := s.groups[groupID]
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	if g.state == StateDead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if code := g.validateMember(memberID, instanceID); code != 0 {
		return code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	m := g.members[memberID]
	switch g.state {
	case StateCompletingRebalance, StateStable:
		resetHeartbeat(m, now)
		return 0
	case StatePreparingRebalance:
		resetHeartbeat(m, now)
		return kerr.RebalanceInProgress.Code
	}
	return kerr.UnknownMemberID.Code
}

type leavingMember struct {
	memberID   string
	instanceID string
}

// leave removes members (LeaveGroup v3+ batches them; a member id of "" with
// an instance id is an administrative removal by instance id).
func (s *shard) leave(groupID string, leaving []leavingMember, now time.Time, eff *effects) (int16, []int16) {
	codes := make([]int16, len(leaving))
	g := s.groups[groupID]
	if g == nil {
		for i := range codes {
			codes[i] = kerr.UnknownMemberID.Code
		}
		return 0, codes
	}
	if g.state == StateDead {
		return kerr.CoordinatorNotAvailable.Code, nil
	}
	for i, l := range leaving {
		switch {
		case l.memberID == "":
			id, ok := g.static[l.instanceID]
			if l.instanceID == "" || !ok {
				codes[i] = kerr.UnknownMemberID.Code
				continue
			}
			s.removeMember(g, g.members[id], now, eff)
		case isPending(g, l.memberID):
			s.removePending(g, l.memberID, now, eff)
		default:
			if code := g.validateMember(l.memberID, l.instanceID); code != 0 {
				codes[i] = code
				continue
			}
			s.removeMember(g, g.members[l.memberID], now, eff)
		}
	}
	return 0, codes
}

func isPending(g *group, id string) bool {
	_, ok := g.pending[id]
	return ok
}
