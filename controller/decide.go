package controller

import (
	"cmp"
	"slices"
	"strings"
)

// This file is the controller's pure core: functions from the cluster state
// and an event to the new state and the actions to take. They do no I/O and
// read no clock; the event loop (controller.go) performs the actions.

// Special leader ids, as in Kafka's LeaderAndIsr.
const (
	NoLeader           int32 = -1 // no live replica can lead
	LeaderDuringDelete int32 = -2 // sent in UpdateMetadata while a topic is deleted
	EpochDuringDelete  int32 = -2 // leader epoch sent in StopReplica for deletion
)

// TP names a topic partition.
type TP struct {
	Topic     string
	Partition int32
}

// TopicState is the controller's view of one topic.
type TopicState struct {
	ID       [16]byte
	Replicas map[int32][]int32 // assignment, preferred leader first
	Adding   map[int32][]int32
	Removing map[int32][]int32
	// States holds partitions that have a state znode; a partition of
	// Replicas missing here is new and not yet started (no live replica yet).
	States map[int32]PartitionState
	// UncleanOverride is the topic's unclean.leader.election.enable
	// override (/config/topics/<t>), nil when it has none.
	UncleanOverride *bool
}

// ClusterState is what the active controller knows. Invariant: a partition's
// state ZkVersion is the version of its state znode as last written or read.
type ClusterState struct {
	ControllerID int32
	Epoch        int32                // controller epoch
	Live         map[int32]BrokerInfo // registered brokers, shutting down or not
	// ShuttingDown holds live brokers in controlled shutdown: they still get
	// requests but may not lead or join an ISR (Kafka's liveBrokerIds
	// versus liveOrShuttingDownBrokerIds).
	ShuttingDown map[int32]bool
	Topics       map[string]*TopicState
	Deleting     map[string]bool // topics queued for deletion
	// Offline holds, per broker, the replicas it reported in failed log
	// dirs (log_dirs.go); they may not lead or be in an ISR until the
	// broker registers again.
	Offline map[int32]map[TP]bool
	// UncleanDefault is unclean.leader.election.enable for topics without
	// an override: the dynamic broker configs over the static one (see
	// ResolveUncleanDefault). Each election decision resolves it per topic
	// (uncleanAllowed), as Kafka's controller reads the topic's log config.
	UncleanDefault bool
	// Faults re-enables fixed bugs, for tests that show the simulation
	// finds them.
	Faults Faults
}

// Faults are old bugs of the controller's decisions a test may switch
// back on.
type Faults struct {
	// KeepBouncedBroker: a broker that restarted (a new registration)
	// may lead again at once and keeps its ISR places, and a new
	// controller does not look for brokers that restarted unseen: the
	// behaviour before the simulated disk's power failures showed that a
	// restarted broker whose log was cut then led and lost acknowledged
	// records (sim seed 1).
	KeepBouncedBroker bool
	// ReassignBeforeInSync: a reassignment completes without waiting
	// for its target replicas to join the ISR (Kafka's
	// isReassignmentComplete reverted), so the removed replicas are
	// stopped and deleted while the added ones have not caught up.
	ReassignBeforeInSync bool
	// ControlledShutdownNotPerformed: ControlledShutdown answers its
	// decision without writing or sending it (a driver bug, for the
	// simulation's test that the shutdown's outcome is checked).
	ControlledShutdownNotPerformed bool
}

// NewClusterState returns an empty state for a controller at epoch.
func NewClusterState(controllerID, epoch int32) *ClusterState {
	return &ClusterState{ControllerID: controllerID, Epoch: epoch, Live: map[int32]BrokerInfo{}, ShuttingDown: map[int32]bool{}, Topics: map[string]*TopicState{}, Deleting: map[string]bool{}, Offline: map[int32]map[TP]bool{}}
}

// StateWrite is a partition state znode to create, or to set if its version
// is still ExpectedVersion.
type StateWrite struct {
	TP              TP
	State           PartitionState
	Create          bool
	ExpectedVersion int32
}

// Actions are what a decision asks the driver to do, in this order: write
// the states (fenced by the controller epoch), then send LeaderAndISR,
// UpdateMetadata and StopReplica built from the state after the decision.
type Actions struct {
	Writes       []StateWrite
	LeaderAndISR map[int32]map[TP]bool // broker -> partitions -> is new
	// UpdateMetadata maps a broker to the partitions to send it; an empty
	// set still sends the live brokers.
	UpdateMetadata map[int32]map[TP]bool
	StopReplica    map[int32][]TP // broker -> partitions to stop and delete
	// Assignments names topics whose /brokers/topics/<t> must be rewritten
	// from the state (a reassignment changed RS, AR or RR); written in the
	// same transaction as Writes.
	Assignments []string
	// RemoveReplicas maps a broker to partitions it no longer hosts after a
	// reassignment: StopReplica with delete, at the current leader epoch.
	RemoveReplicas map[int32][]TP
	// ZkReassignmentDone lists entries to drop from /admin/reassign_partitions.
	ZkReassignmentDone []ReassignmentDone
	// MetadataFirst names brokers whose metadata cache may not know the
	// leaders yet (one that just registered; every broker at failover):
	// they get UpdateMetadata before LeaderAndISR, as Kafka's controller's
	// onBrokerStartup and onControllerFailover send it, because a Kafka
	// broker refuses to follow a leader missing from its cache.
	MetadataFirst map[int32]bool
}

func newActions() Actions {
	return Actions{LeaderAndISR: map[int32]map[TP]bool{}, UpdateMetadata: map[int32]map[TP]bool{}, StopReplica: map[int32][]TP{}, RemoveReplicas: map[int32][]TP{}, MetadataFirst: map[int32]bool{}}
}

// Empty reports whether there is nothing to do.
func (a Actions) Empty() bool {
	return len(a.Writes) == 0 && len(a.LeaderAndISR) == 0 && len(a.UpdateMetadata) == 0 && len(a.StopReplica) == 0 &&
		len(a.Assignments) == 0 && len(a.RemoveReplicas) == 0 && len(a.ZkReassignmentDone) == 0
}

func (a Actions) addLeaderAndISR(broker int32, tp TP, isNew bool) {
	m := a.LeaderAndISR[broker]
	if m == nil {
		m = map[TP]bool{}
		a.LeaderAndISR[broker] = m
	}
	m[tp] = m[tp] || isNew
}

// updateAll sends tps to every live broker.
func (a Actions) updateAll(s *ClusterState, tps ...TP) {
	for id := range s.Live {
		m := a.UpdateMetadata[id]
		if m == nil {
			m = map[TP]bool{}
			a.UpdateMetadata[id] = m
		}
		for _, tp := range tps {
			m[tp] = true
		}
	}
}

// isLive reports whether a broker may lead or be in an ISR.
func (s *ClusterState) isLive(id int32) bool {
	_, ok := s.Live[id]
	return ok && !s.ShuttingDown[id]
}

// reachable reports whether a broker is registered and so gets requests.
func (s *ClusterState) reachable(id int32) bool { _, ok := s.Live[id]; return ok }

func (s *ClusterState) liveOf(replicas []int32) []int32 {
	return filter(replicas, s.isLive)
}

func filter(ids []int32, keep func(int32) bool) []int32 {
	var out []int32
	for _, r := range ids {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// AllPartitions lists every partition of the assignment, sorted.
func (s *ClusterState) AllPartitions() []TP {
	var out []TP
	for name, t := range s.Topics {
		for p := range t.Replicas {
			out = append(out, TP{name, p})
		}
	}
	sortTPs(out)
	return out
}

func sortTPs(tps []TP) { slices.SortFunc(tps, compareTPs) }

// compareTPs orders partitions by topic, then partition.
func compareTPs(a, b TP) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// ElectLeader is Kafka's offline partition leader election: the first
// replica in assignment order that is live and in the ISR; failing that, if
// unclean election is allowed, the first live replica, which becomes the
// only ISR member. ok is false when no replica can lead.
func ElectLeader(replicas, isr []int32, live func(int32) bool, unclean bool) (leader int32, newISR []int32, uncleanUsed, ok bool) {
	for _, r := range replicas {
		if live(r) && slices.Contains(isr, r) {
			for _, i := range isr {
				if live(i) {
					newISR = append(newISR, i)
				}
			}
			return r, newISR, false, true
		}
	}
	if unclean {
		for _, r := range replicas {
			if live(r) {
				return r, []int32{r}, true, true
			}
		}
	}
	return NoLeader, nil, false, false
}

// OnNewPartitions starts partitions that have no state yet: the leader is
// the first live replica, the ISR all live replicas, leader epoch 0.
// Partitions without a live replica stay new until a replica's broker comes.
func (s *ClusterState) OnNewPartitions(tps []TP) Actions {
	a := newActions()
	sortTPs(tps)
	var started []TP
	for _, tp := range tps {
		t := s.Topics[tp.Topic]
		if t == nil || s.Deleting[tp.Topic] {
			continue
		}
		if _, ok := t.States[tp.Partition]; ok {
			continue
		}
		live := s.liveOf(t.Replicas[tp.Partition])
		if len(live) == 0 {
			continue
		}
		st := PartitionState{Leader: live[0], LeaderEpoch: 0, ISR: live, ControllerEpoch: s.Epoch}
		a.Writes = append(a.Writes, StateWrite{TP: tp, State: st, Create: true})
		t.States[tp.Partition] = st // ZkVersion 0 once created
		for _, b := range live {
			a.addLeaderAndISR(b, tp, true)
		}
		started = append(started, tp)
	}
	if len(started) > 0 {
		a.updateAll(s, started...)
	}
	return a
}

// changeState records a new state for an existing partition and tells its
// live replicas and every live broker.
func (s *ClusterState) changeState(a *Actions, tp TP, st PartitionState) {
	t := s.Topics[tp.Topic]
	old := t.States[tp.Partition]
	st.ControllerEpoch = s.Epoch
	a.Writes = append(a.Writes, StateWrite{TP: tp, State: st, ExpectedVersion: old.ZkVersion})
	st.ZkVersion = old.ZkVersion + 1
	t.States[tp.Partition] = st
	for _, b := range filter(t.Replicas[tp.Partition], s.reachable) {
		a.addLeaderAndISR(b, tp, false)
	}
	a.updateAll(s, tp)
}

// reelect moves a partition whose leader is gone (or which has none) to a
// new leader, or records that it has none, as Kafka's controller does when
// replicas go offline: the leader epoch is bumped, dead replicas leave the
// ISR, but the last ISR member is kept so that a clean election stays
// possible when it returns. Brokers in bounced restarted since the state
// was written: as in Kafka's processBrokerChange, which runs
// onBrokerFailure for them before onBrokerStartup, they count as offline
// (a restart may have lost unflushed records), unless they are the only
// clean choice left: then one leads again, as onBrokerStartup would elect
// it, alone in the ISR (onBrokerFailure keeps one member), and the others
// catch up first.
func (s *ClusterState) reelect(a *Actions, tp TP, bounced map[int32]bool) {
	t := s.Topics[tp.Topic]
	old := t.States[tp.Partition]
	online := func(r int32) bool { return s.replicaOnline(r, tp) && !bounced[r] }
	leader, isr, _, ok := ElectLeader(t.Replicas[tp.Partition], old.ISR, online, s.uncleanAllowed(tp.Topic))
	if !ok && len(bounced) > 0 {
		online = func(r int32) bool { return s.replicaOnline(r, tp) }
		if leader, _, _, ok = ElectLeader(t.Replicas[tp.Partition], old.ISR, online, false); ok {
			isr = []int32{leader}
		}
	}
	if !ok {
		if old.Leader == NoLeader {
			return // already recorded as leaderless
		}
		isr = filter(old.ISR, online)
		if len(isr) == 0 && len(old.ISR) > 0 {
			isr = []int32{old.ISR[0]}
		}
	}
	st := PartitionState{Leader: leader, LeaderEpoch: old.LeaderEpoch + 1, ISR: isr, LeaderRecoveryState: old.LeaderRecoveryState}
	s.changeState(a, tp, st)
}

// OnBrokersChange handles a new set of live brokers. A broker whose epoch
// changed restarted in between and counts as both dead and new.
func (s *ClusterState) OnBrokersChange(newLive map[int32]BrokerInfo) Actions {
	a := newActions()
	dead := map[int32]bool{}
	added := map[int32]bool{}
	for id, b := range s.Live {
		nb, ok := newLive[id]
		if !ok || nb.Epoch != b.Epoch {
			dead[id] = true
		}
	}
	for id, b := range newLive {
		ob, ok := s.Live[id]
		if !ok || ob.Epoch != b.Epoch {
			added[id] = true
		}
	}
	old := s.Live
	s.Live = map[int32]BrokerInfo{}
	for id, b := range newLive {
		s.Live[id] = b
	}
	for id := range dead {
		delete(s.ShuttingDown, id) // a restarted broker is no longer shutting down
		delete(s.Offline, id)      // nor has it failed log dirs we know of
	}
	if len(dead) == 0 && len(added) == 0 {
		// The same registrations, one rewritten with new endpoints or
		// rack: every broker learns them (Kafka's processBrokerModification
		// and onBrokerUpdate).
		for id, b := range newLive {
			if ob := old[id]; ob.Rack != b.Rack || !slices.Equal(ob.Endpoints, b.Endpoints) {
				a.updateAll(s)
				break
			}
		}
		return a
	}
	var newParts []TP
	for _, tp := range s.AllPartitions() {
		if s.Deleting[tp.Topic] {
			continue
		}
		t := s.Topics[tp.Topic]
		st, ok := t.States[tp.Partition]
		if !ok {
			newParts = append(newParts, tp)
			continue
		}
		switch {
		case st.Leader == NoLeader || !s.reachable(st.Leader) || dead[st.Leader]:
			if s.Faults.KeepBouncedBroker {
				s.reelect(&a, tp, nil)
			} else {
				s.reelect(&a, tp, dead)
			}
		case anyIn(st.ISR, dead):
			isr := slices.DeleteFunc(slices.Clone(st.ISR), func(r int32) bool { return dead[r] })
			s.changeState(&a, tp, PartitionState{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch + 1, ISR: isr, LeaderRecoveryState: st.LeaderRecoveryState})
		}
	}
	started := s.OnNewPartitions(newParts)
	a.merge(started)
	// Every live broker learns the new broker set; new brokers get the whole
	// metadata and the state of each partition they host.
	a.updateAll(s)
	all := s.AllPartitions()
	for id := range added {
		a.MetadataFirst[id] = true
		for _, tp := range all {
			if !hasState(s, tp) {
				continue
			}
			a.UpdateMetadata[id][tp] = true
			if slices.Contains(s.Topics[tp.Topic].Replicas[tp.Partition], id) && !s.Deleting[tp.Topic] {
				a.addLeaderAndISR(id, tp, false)
			}
		}
	}
	// Reassignments waiting for a broker of their target resume
	// (Kafka's onBrokerStartup).
	if len(added) > 0 {
		a.merge(s.ResumeReassignments(func(_ TP, ra ReplicaAssignment) bool { return anyIn(ra.Target(), added) }))
	}
	return a
}

func hasState(s *ClusterState, tp TP) bool {
	_, ok := s.Topics[tp.Topic].States[tp.Partition]
	return ok
}

func anyIn(ids []int32, set map[int32]bool) bool {
	for _, id := range ids {
		if set[id] {
			return true
		}
	}
	return false
}

func (a *Actions) merge(b Actions) {
	a.Writes = append(a.Writes, b.Writes...)
	for id, m := range b.LeaderAndISR {
		for tp, isNew := range m {
			a.addLeaderAndISR(id, tp, isNew)
		}
	}
	for id, m := range b.UpdateMetadata {
		dst := a.UpdateMetadata[id]
		if dst == nil {
			dst = map[TP]bool{}
			a.UpdateMetadata[id] = dst
		}
		for tp := range m {
			dst[tp] = true
		}
	}
	for id, tps := range b.StopReplica {
		a.StopReplica[id] = append(a.StopReplica[id], tps...)
	}
	for id := range b.MetadataFirst {
		a.MetadataFirst[id] = true
	}
	for _, name := range b.Assignments {
		if !slices.Contains(a.Assignments, name) {
			a.Assignments = append(a.Assignments, name)
		}
	}
	for id, tps := range b.RemoveReplicas {
		a.RemoveReplicas[id] = append(a.RemoveReplicas[id], tps...)
	}
	a.ZkReassignmentDone = append(a.ZkReassignmentDone, b.ZkReassignmentDone...)
}

// OnElected is what a newly elected controller does with the state it
// loaded: start new partitions, elect leaders where the leader is gone, then
// send every live broker the full metadata and the state of all its replicas.
func (s *ClusterState) OnElected() Actions {
	a := newActions()
	var newParts []TP
	for _, tp := range s.AllPartitions() {
		if s.Deleting[tp.Topic] {
			continue
		}
		st, ok := s.Topics[tp.Topic].States[tp.Partition]
		bounced := s.bouncedSince(st)
		switch {
		case !ok:
			newParts = append(newParts, tp)
		case st.Leader == NoLeader || !s.isLive(st.Leader) || bounced[st.Leader]:
			s.reelect(&a, tp, bounced)
		case slices.ContainsFunc(st.ISR, func(r int32) bool { return !s.isLive(r) || bounced[r] }):
			// Brokers that died while no controller watched (the old
			// controller among them) leave the ISR now, as Kafka's replica
			// state machine moves offline replicas to OfflineReplica at
			// failover, rather than after replica.lag.time.max.ms; so do
			// those that restarted unseen, as a bounce seen live would.
			isr := filter(st.ISR, func(r int32) bool { return s.isLive(r) && !bounced[r] })
			s.changeState(&a, tp, PartitionState{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch + 1, ISR: isr, LeaderRecoveryState: st.LeaderRecoveryState})
		}
	}
	a.merge(s.OnNewPartitions(newParts))
	for _, tp := range s.AllPartitions() {
		if !hasState(s, tp) {
			continue
		}
		a.updateAll(s, tp)
		if s.Deleting[tp.Topic] {
			continue
		}
		for _, b := range filter(s.Topics[tp.Topic].Replicas[tp.Partition], s.reachable) {
			a.addLeaderAndISR(b, tp, false)
		}
	}
	a.updateAll(s)
	for id := range s.Live {
		a.MetadataFirst[id] = true
	}
	return a
}

// bouncedSince returns the ISR members (the leader among them) registered
// after st was written: their place in it was given to an incarnation that
// has since restarted, unseen by a controller (it may have been the
// controller itself). Kafka's controller misses these at failover; a
// restart that lost unflushed records would otherwise lead, or stay in the
// ISR, with a shorter log than the records it acknowledged.
func (s *ClusterState) bouncedSince(st PartitionState) map[int32]bool {
	if st.Mzxid <= 0 || s.Faults.KeepBouncedBroker {
		return nil
	}
	var out map[int32]bool
	for _, r := range st.ISR {
		if b, ok := s.Live[r]; ok && b.Epoch > st.Mzxid {
			if out == nil {
				out = map[int32]bool{}
			}
			out[r] = true
		}
	}
	return out
}

// OnTopicDeletion starts deleting a topic: every live broker learns that
// its partitions are being deleted (leader -2), and each live replica is
// told to stop and delete them. It returns whether every replica is live;
// if not, the deletion must wait (Kafka marks it ineligible) and is retried
// when brokers change.
func (s *ClusterState) OnTopicDeletion(topic string) (Actions, bool) {
	a := newActions()
	t := s.Topics[topic]
	if t == nil {
		return a, true
	}
	s.Deleting[topic] = true
	allLive := true
	var tps []TP
	for _, p := range sortedInt32(t.Replicas) {
		tp := TP{topic, p}
		tps = append(tps, tp)
		for _, r := range t.Replicas[p] {
			if s.reachable(r) {
				a.StopReplica[r] = append(a.StopReplica[r], tp)
			} else {
				allLive = false
			}
		}
	}
	a.updateAll(s, tps...)
	return a, allLive
}

// OnTopicDeleted forgets a topic whose znodes are gone.
func (s *ClusterState) OnTopicDeleted(topic string) {
	delete(s.Topics, topic)
	delete(s.Deleting, topic)
}

// OnAssignmentChange records a topic's (new or changed) assignment and
// returns the partitions that were added.
func (s *ClusterState) OnAssignmentChange(name string, a TopicAssignment) []TP {
	t := s.Topics[name]
	if t != nil && a.TopicID != ([16]byte{}) && t.ID != a.TopicID {
		// Deleted and re-created behind our back: a different topic.
		t = nil
	}
	if t == nil {
		t = &TopicState{States: map[int32]PartitionState{}}
		s.Topics[name] = t
	}
	var added []TP
	for p := range a.Partitions {
		if _, ok := t.Replicas[p]; !ok {
			added = append(added, TP{name, p})
		}
	}
	t.ID, t.Replicas, t.Adding, t.Removing = a.TopicID, a.Partitions, a.Adding, a.Removing
	sortTPs(added)
	return added
}
