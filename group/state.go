package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a classic group's state, named as Kafka names it in DescribeGroups
// and ListGroups.
type State int8

const (
	StateEmpty State = iota
	StatePreparingRebalance
	StateCompletingRebalance
	StateStable
	StateDead
)

func (s State) String() string {
	switch s {
	case StateEmpty:
		return "Empty"
	case StatePreparingRebalance:
		return "PreparingRebalance"
	case StateCompletingRebalance:
		return "CompletingRebalance"
	case StateStable:
		return "Stable"
	case StateDead:
		return "Dead"
	}
	return "Unknown"
}

// validPrevious lists the states each state may be entered from, as Kafka's
// GroupState does; a transition outside this table is a bug in this package.
var validPrevious = [...][]State{
	StateEmpty:               {StatePreparingRebalance},
	StatePreparingRebalance:  {StateStable, StateCompletingRebalance, StateEmpty},
	StateCompletingRebalance: {StatePreparingRebalance},
	StateStable:              {StateCompletingRebalance},
	StateDead:                {StateStable, StatePreparingRebalance, StateCompletingRebalance, StateEmpty, StateDead},
}

// newMemberJoinTimeout bounds how long a brand-new member may wait in a
// rebalance: it has no member id to heartbeat with, and a client that gave up
// and retried would otherwise leave a defunct member behind (Kafka's
// NewMemberJoinTimeoutMs).
const newMemberJoinTimeout = 5 * time.Minute

// consumerProtocolType is the protocol type of Kafka consumers; only such
// groups expose subscribed topics (for offset expiry and OffsetDelete).
const consumerProtocolType = "consumer"

// limits are the broker configs the state machine obeys.
type limits struct {
	minSessionTimeout     time.Duration // group.min.session.timeout.ms
	maxSessionTimeout     time.Duration // group.max.session.timeout.ms
	initialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms
	maxGroupSize          int           // group.max.size
	offsetsRetention      time.Duration // offsets.retention.minutes
	maxMetadataSize       int           // offset.metadata.max.bytes
}

type protocol struct {
	name     string
	metadata []byte
}

type member struct {
	id               string
	instanceID       string // "" for dynamic members
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocolType     string
	protocols        []protocol // in the member's order of preference
	assignment       []byte

	// A non-nil waiter means the member has a JoinGroup (or SyncGroup)
	// outstanding; it is answered exactly once, then set back to nil.
	joinWaiter chan<- joinResult
	syncWaiter chan<- syncResult

	isNew bool
	// heartbeatDeadline is when the member is removed unless it heartbeats;
	// zero while it waits in a rebalance, which counts as being alive.
	heartbeatDeadline time.Time
}

func (m *member) awaitingJoin() bool { return m.joinWaiter != nil }
func (m *member) awaitingSync() bool { return m.syncWaiter != nil }

func (m *member) metadataFor(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// matches reports whether a rejoin carries the same protocols in the same
// order, in which case it need not trigger a rebalance.
func (m *member) matches(ps []protocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].name != m.protocols[i].name || string(ps[i].metadata) != string(m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// vote is the member's preferred protocol among those all members support.
func (m *member) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.name] {
			return p.name
		}
	}
	return ""
}

type topicPartition struct {
	topic     string
	partition int32
}

// offsetEntry is one committed offset. Timestamps are Unix milliseconds as
// Kafka stores them; expireTimestamp is -1 unless the commit carried a
// retention time (OffsetCommit v2-v4).
type offsetEntry struct {
	offset          int64
	leaderEpoch     int32
	metadata        string
	commitTimestamp int64
	expireTimestamp int64
	// appendOffset is the __consumer_offsets offset of the batch the
	// record was written in (0 until written): a transaction's marker
	// commits its offset for a partition only over an older one, so that
	// the later write in log order wins, as in Kafka.
	appendOffset int64
}

// olderThan reports whether o was written before other.
func (o offsetEntry) olderThan(other offsetEntry) bool { return o.appendOffset < other.appendOffset }

// group is one classic group. All fields are owned by the shard lock.
type group struct {
	id             string
	state          State
	stateTimestamp time.Time
	protocolType   string // "" until the first member joins
	protocolName   string // "" when no protocol is selected
	generation     int32
	leader         string // "" when there is no leader

	members     map[string]*member
	memberOrder []string          // join order: the next leader is the oldest member, deterministically
	static      map[string]string // group.instance.id -> member id
	pending     map[string]time.Time
	pendingSync map[string]bool

	numAwaitingJoin int
	supported       map[string]int // protocol name -> number of members supporting it

	// Rebalance timers. joinDeadline is set while PreparingRebalance; an
	// initial join (group was Empty) waits the whole delay and is extended
	// while new members keep arriving, up to joinRemaining more.
	joinDeadline   time.Time
	joinInitial    bool
	joinRemaining  time.Duration
	newMemberAdded bool
	syncDeadline   time.Time // zero unless members owe a SyncGroup

	subscribedTopics map[string]bool // nil when unknown (non-consumer protocol or unparsable metadata)

	offsets        map[topicPartition]offsetEntry
	pendingCommits map[topicPartition]int // commits written but not yet acknowledged
}

func newGroup(id string, now time.Time) *group {
	return &group{
		id:             id,
		state:          StateEmpty,
		stateTimestamp: now,
		members:        map[string]*member{},
		static:         map[string]string{},
		pending:        map[string]time.Time{},
		pendingSync:    map[string]bool{},
		supported:      map[string]int{},
		offsets:        map[topicPartition]offsetEntry{},
		pendingCommits: map[topicPartition]int{},
	}
}

func (g *group) transition(to State, now time.Time) {
	ok := false
	for _, s := range validPrevious[to] {
		if s == g.state {
			ok = true
		}
	}
	if !ok {
		panic("group: invalid transition from " + g.state.String() + " to " + to.String())
	}
	g.state = to
	g.stateTimestamp = now
}

func (g *group) canRebalance() bool {
	for _, s := range validPrevious[StatePreparingRebalance] {
		if s == g.state {
			return true
		}
	}
	return false
}

func (g *group) add(m *member) {
	if m.instanceID != "" {
		g.static[m.instanceID] = m.id
	}
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	g.memberOrder = append(g.memberOrder, m.id)
	for _, p := range m.protocols {
		g.supported[p.name]++
	}
	if m.awaitingJoin() {
		g.numAwaitingJoin++
	}
	delete(g.pending, m.id)
}

// remove drops a member without answering its waiters; callers answer first
// when the member may have a request outstanding.
func (g *group) remove(id string) {
	if m, ok := g.members[id]; ok {
		for _, p := range m.protocols {
			g.supported[p.name]--
		}
		if m.awaitingJoin() {
			g.numAwaitingJoin--
		}
		if m.instanceID != "" {
			delete(g.static, m.instanceID)
		}
		delete(g.members, id)
		for i, mid := range g.memberOrder {
			if mid == id {
				g.memberOrder = append(g.memberOrder[:i:i], g.memberOrder[i+1:]...)
				break
			}
		}
	}
	if g.leader == id {
		g.leader = ""
		if len(g.memberOrder) > 0 {
			g.leader = g.memberOrder[0]
		}
	}
	delete(g.pending, id)
	delete(g.pendingSync, id)
}

// updateMember replaces a member's protocols, timeouts and join waiter. A
// superseded waiter (the client retried) is answered so that no request
// hangs.
func (g *group) updateMember(m *member, ps []protocol, rebalanceTimeout, sessionTimeout time.Duration, waiter chan<- joinResult, eff *effects) {
	for _, p := range m.protocols {
		g.supported[p.name]--
	}
	m.protocols = ps
	m.rebalanceTimeout, m.sessionTimeout = rebalanceTimeout, sessionTimeout
	for _, p := range m.protocols {
		g.supported[p.name]++
	}
	switch {
	case waiter != nil && !m.awaitingJoin():
		g.numAwaitingJoin++
	case waiter == nil && m.awaitingJoin():
		g.numAwaitingJoin--
	case waiter != nil && m.awaitingJoin():
		eff.join(m.joinWaiter, joinError(m.id, kerr.RebalanceInProgress.Code))
	}
	m.joinWaiter = waiter
}

// replaceStatic moves a static member to a new member id; whoever still
// waits under the old id is a duplicate instance and is fenced.
func (g *group) replaceStatic(instanceID, oldID, newID string, eff *effects) *member {
	m := g.members[oldID]
	if m.joinWaiter != nil {
		eff.join(m.joinWaiter, joinError(oldID, kerr.FencedInstanceID.Code))
		m.joinWaiter = nil
		g.numAwaitingJoin--
	}
	if m.syncWaiter != nil {
		eff.sync(m.syncWaiter, syncResult{err: kerr.FencedInstanceID.Code})
		m.syncWaiter = nil
	}
	delete(g.members, oldID)
	m.id = newID
	g.members[newID] = m
	for i, mid := range g.memberOrder {
		if mid == oldID {
			g.memberOrder[i] = newID
		}
	}
	if g.leader == oldID {
		g.leader = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	g.static[instanceID] = newID
	return m
}

func (g *group) hasAllMembersJoined() bool {
	return len(g.members) == g.numAwaitingJoin && len(g.pending) == 0
}

func (g *group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

func (g *group) candidateProtocols() map[string]bool {
	c := map[string]bool{}
	for name, n := range g.supported {
		if n == len(g.members) {
			c[name] = true
		}
	}
	return c
}

// selectProtocol lets every member vote for its preferred common protocol;
// ties go to the protocol the oldest member prefers, so the choice is
// deterministic.
func (g *group) selectProtocol() string {
	candidates := g.candidateProtocols()
	votes := map[string]int{}
	for _, m := range g.members {
		votes[m.vote(candidates)]++
	}
	best, bestVotes := "", -1
	for _, id := range g.memberOrder {
		for _, p := range g.members[id].protocols {
			if candidates[p.name] && votes[p.name] > bestVotes {
				best, bestVotes = p.name, votes[p.name]
			}
		}
	}
	return best
}

func (g *group) supportsProtocols(protocolType string, ps []protocol) bool {
	if g.state == StateEmpty {
		return protocolType != "" && len(ps) > 0
	}
	if g.protocolType != protocolType {
		return false
	}
	for _, p := range ps {
		if g.supported[p.name] == len(g.members) {
			return true
		}
	}
	return false
}

// maybeElectNewJoinedLeader keeps the leader if it rejoined, else picks a
// member that did; it reports false when nobody rejoined.
func (g *group) maybeElectNewJoinedLeader() bool {
	if g.leader == "" {
		return false
	}
	if g.members[g.leader].awaitingJoin() {
		return true
	}
	for _, id := range g.memberOrder {
		if g.members[id].awaitingJoin() {
			g.leader = id
			return true
		}
	}
	return false
}

func (g *group) initNextGeneration(now time.Time) {
	g.generation++
	if len(g.members) > 0 {
		g.protocolName = g.selectProtocol()
		g.subscribedTopics = g.computeSubscribedTopics()
		g.transition(StateCompletingRebalance, now)
	} else {
		g.protocolName = ""
		g.subscribedTopics = g.computeSubscribedTopics()
		g.transition(StateEmpty, now)
	}
	clear(g.pendingSync)
	g.syncDeadline = time.Time{}
}

// validateMember checks that a request's member id (and instance id, when
// given) names the current member; an instance id mapped to another member
// id means a duplicate instance, which is fenced.
func (g *group) validateMember(memberID, instanceID string) int16 {
	if instanceID != "" {
		cur, ok := g.static[instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if cur != memberID {
			return kerr.FencedInstanceID.Code
		}
		return 0
	}
	if _, ok := g.members[memberID]; !ok {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

func (g *group) isLeader(id string) bool { return g.leader != "" && g.leader == id }
