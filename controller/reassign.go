package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file is the partition reassignment state machine of Kafka's
// ZooKeeper-mode controller (KIP-455, Kafka 2.4+), as pure decisions on
// ClusterState. Kafka's names: RS the replicas, AR the adding replicas, RR
// the removing replicas, ORS = RS - AR the replicas before the
// reassignment, TRS = RS - RR its target.
//
// Every trigger (AlterPartitionReassignments, /admin/reassign_partitions,
// an ISR change, a controller or broker start) ends in
// onPartitionReassignment, which is safe to repeat:
//
//	U1/U2  write RS = ORS+TRS, AR, RR to the topic znode and the state;
//	U3     stop replicas that an earlier reassignment added and the new one drops;
//	A      TRS not yet in the ISR: bump the leader epoch and send LeaderAndISR
//	       to RS (AR as new replicas); the leader adds AR to the ISR as they
//	       catch up, and each AlterPartition brings us back here;
//	B      TRS within the ISR: RS = TRS, elect a leader in TRS if needed (else
//	       bump the epoch), take RR out of the ISR, StopReplica (delete) to
//	       RR, write the topic znode, drop the partition from
//	       /admin/reassign_partitions, UpdateMetadata everywhere.

// ReplicaAssignment is a partition's full assignment: Kafka's ReplicaAssignment.
type ReplicaAssignment struct {
	Replicas []int32 // RS, preferred leader first
	Adding   []int32 // AR
	Removing []int32 // RR
}

// Origin is ORS, the replicas before the reassignment.
func (r ReplicaAssignment) Origin() []int32 { return minus(r.Replicas, r.Adding) }

// Target is TRS, the replicas after it.
func (r ReplicaAssignment) Target() []int32 { return minus(r.Replicas, r.Removing) }

// Reassigning reports whether a reassignment is in progress.
func (r ReplicaAssignment) Reassigning() bool { return len(r.Adding) > 0 || len(r.Removing) > 0 }

// ReassignTo starts (or replaces) a reassignment to target: RS is target
// followed by the origin replicas not in it, so the preferred leader of
// the target leads once the reassignment completes.
func (r ReplicaAssignment) ReassignTo(target []int32) ReplicaAssignment {
	origin := r.Origin()
	rs := distinct(append(slices.Clone(target), origin...))
	return ReplicaAssignment{Replicas: rs, Adding: minus(rs, origin), Removing: minus(rs, target)}
}

func (r ReplicaAssignment) equal(o ReplicaAssignment) bool {
	return slices.Equal(r.Replicas, o.Replicas) && slices.Equal(r.Adding, o.Adding) && slices.Equal(r.Removing, o.Removing)
}

// minus is a without the members of b, in a's order.
func minus(a, b []int32) []int32 {
	var out []int32
	for _, id := range a {
		if !slices.Contains(b, id) {
			out = append(out, id)
		}
	}
	return out
}

func distinct(ids []int32) []int32 {
	var out []int32
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// ApiError is a Kafka error code with its message (Kafka's ApiError).
type ApiError struct {
	Code    int16
	Message string
}

// ReassignmentDone is a partition whose zk-triggered reassignment entry
// must leave /admin/reassign_partitions. Replicas nil matches any entry;
// otherwise only an entry with exactly these replicas is removed, as Kafka
// removes a completed entry only if it still asks for what completed.
type ReassignmentDone struct {
	TP       TP
	Replicas []int32
}

// Assignment returns a partition's full assignment.
func (s *ClusterState) Assignment(tp TP) ReplicaAssignment {
	t := s.Topics[tp.Topic]
	if t == nil {
		return ReplicaAssignment{}
	}
	return ReplicaAssignment{Replicas: t.Replicas[tp.Partition], Adding: t.Adding[tp.Partition], Removing: t.Removing[tp.Partition]}
}

// setAssignment records a new assignment and asks for the topic znode to
// be rewritten (Kafka's updateReplicaAssignmentForPartition).
func (s *ClusterState) setAssignment(a *Actions, tp TP, ra ReplicaAssignment) {
	t := s.Topics[tp.Topic]
	if t.Adding == nil {
		t.Adding = map[int32][]int32{}
	}
	if t.Removing == nil {
		t.Removing = map[int32][]int32{}
	}
	t.Replicas[tp.Partition] = slices.Clone(ra.Replicas)
	set := func(m map[int32][]int32, v []int32) {
		if len(v) == 0 {
			delete(m, tp.Partition)
		} else {
			m[tp.Partition] = slices.Clone(v)
		}
	}
	set(t.Adding, ra.Adding)
	set(t.Removing, ra.Removing)
	if !slices.Contains(a.Assignments, tp.Topic) {
		a.Assignments = append(a.Assignments, tp.Topic)
	}
}

// ReassignmentRequest is one partition of AlterPartitionReassignments:
// Target nil cancels.
type ReassignmentRequest struct {
	TP     TP
	Target []int32
}

// OnAlterReassignments decides AlterPartitionReassignments, as Kafka's
// processApiPartitionReassignment does: validate each target, build the
// reassignment (a cancellation reverts to ORS), and run it. The latest
// request wins over an entry of /admin/reassign_partitions for the same
// partition, which is therefore removed. allowRFChange is v1's
// allow_replication_factor_change (Kafka 4.x).
func (s *ClusterState) OnAlterReassignments(reqs []ReassignmentRequest, allowRFChange bool) (map[TP]ApiError, Actions) {
	a := newActions()
	out := map[TP]ApiError{}
	var run []TP
	build := map[TP]ReplicaAssignment{}
	for _, r := range reqs {
		if r.Target != nil {
			if err, bad := s.validateReplicas(r.TP, r.Target, allowRFChange); bad {
				out[r.TP] = err
				continue
			}
		}
		ra, ok := s.buildReassignment(r.TP, r.Target)
		if !ok {
			out[r.TP] = ApiError{kerr.NoReassignmentInProgress.Code, kerr.NoReassignmentInProgress.Message}
			continue
		}
		build[r.TP] = ra
		run = append(run, r.TP)
	}
	for _, tp := range run {
		a.ZkReassignmentDone = append(a.ZkReassignmentDone, ReassignmentDone{TP: tp})
	}
	for tp, e := range s.triggerReassignments(&a, run, build) {
		out[tp] = e
	}
	return out, a
}

// OnZkReassignments runs the reassignments read from a newly created
// /admin/reassign_partitions. Entries that fail leave the znode (they are
// in a.ZkReassignmentDone); the others leave it as they complete.
func (s *ClusterState) OnZkReassignments(targets map[TP][]int32) (map[TP]ApiError, Actions) {
	a := newActions()
	var run []TP
	build := map[TP]ReplicaAssignment{}
	for _, tp := range sortedTPKeys(targets) {
		ra, _ := s.buildReassignment(tp, targets[tp])
		build[tp] = ra
		run = append(run, tp)
	}
	out := s.triggerReassignments(&a, run, build)
	for _, tp := range sortedTPKeys(out) {
		if out[tp].Code != 0 {
			a.ZkReassignmentDone = append(a.ZkReassignmentDone, ReassignmentDone{TP: tp})
		}
	}
	return out, a
}

// validateReplicas is Kafka's validateReplicas: a non-empty list of
// distinct, non-negative ids, whose added replicas are all live brokers.
func (s *ClusterState) validateReplicas(tp TP, target []int32, allowRFChange bool) (ApiError, bool) {
	invalid := func(msg string) (ApiError, bool) {
		return ApiError{kerr.InvalidReplicaAssignment.Code, msg}, true
	}
	switch {
	case len(target) == 0:
		return invalid("Empty replica list specified in partition reassignment.")
	case len(distinct(target)) != len(target):
		return invalid(fmt.Sprintf("Duplicate replica ids in partition reassignment replica list: %v", target))
	case slices.ContainsFunc(target, func(id int32) bool { return id < 0 }):
		return invalid(fmt.Sprintf("Invalid broker id in replica list: %v", target))
	}
	next := s.Assignment(tp).ReassignTo(target)
	for _, id := range next.Adding {
		if !s.isLive(id) {
			return invalid(fmt.Sprintf("Replica assignment has brokers that are not alive. Replica list: %v, live broker list: %v", next.Adding, s.liveIDs()))
		}
	}
	if origin := s.Assignment(tp).Origin(); !allowRFChange && len(origin) > 0 && len(origin) != len(target) {
		return ApiError{kerr.InvalidReplicationFactor.Code, fmt.Sprintf("The replication factor is changed from %d to %d", len(origin), len(target))}, true
	}
	return ApiError{}, false
}

func (s *ClusterState) liveIDs() []int32 {
	var out []int32
	for _, id := range sortedKeys(s.Live) {
		if s.isLive(id) {
			out = append(out, id)
		}
	}
	return out
}

// buildReassignment is Kafka's maybeBuildReassignment: target nil cancels
// a reassignment in progress (back to ORS); ok is false when there is none.
func (s *ClusterState) buildReassignment(tp TP, target []int32) (ReplicaAssignment, bool) {
	cur := s.Assignment(tp)
	if target == nil {
		if !cur.Reassigning() {
			return ReplicaAssignment{}, false
		}
		target = cur.Origin()
	}
	return cur.ReassignTo(target), true
}

// triggerReassignments is Kafka's maybeTriggerPartitionReassignment.
func (s *ClusterState) triggerReassignments(a *Actions, tps []TP, build map[TP]ReplicaAssignment) map[TP]ApiError {
	out := map[TP]ApiError{}
	for _, tp := range tps {
		t := s.Topics[tp.Topic]
		if t == nil || s.Deleting[tp.Topic] || len(t.Replicas[tp.Partition]) == 0 {
			out[tp] = ApiError{kerr.UnknownTopicOrPartition.Code, "The partition does not exist."}
			continue
		}
		s.onPartitionReassignment(a, tp, build[tp])
		out[tp] = ApiError{}
	}
	return out
}

// reassignmentComplete is Kafka's isReassignmentComplete: TRS is within the ISR.
func (s *ClusterState) reassignmentComplete(tp TP, ra ReplicaAssignment) bool {
	if !ra.Reassigning() || s.Faults.ReassignBeforeInSync {
		return true
	}
	st, ok := s.Topics[tp.Topic].States[tp.Partition]
	if !ok {
		return false
	}
	for _, r := range ra.Target() {
		if !slices.Contains(st.ISR, r) {
			return false
		}
	}
	return true
}

// onPartitionReassignment is one step of Kafka's onPartitionReassignment
// (see the top of this file).
func (s *ClusterState) onPartitionReassignment(a *Actions, tp TP, ra ReplicaAssignment) {
	t := s.Topics[tp.Topic]
	cur := s.Assignment(tp)
	if !cur.equal(ra) {
		s.setAssignment(a, tp, ra) // U1, U2
		if unneeded := minus(cur.Replicas, ra.Replicas); len(unneeded) > 0 {
			s.removeReplicas(a, tp, unneeded) // U3
		}
	}
	st, started := t.States[tp.Partition]
	if !s.reassignmentComplete(tp, ra) {
		if !started {
			return // no leader to tell yet; resumed when its brokers come
		}
		// A1: a new leader epoch and the new RS to every replica; A2: AR start as new replicas.
		s.changeState(a, tp, PartitionState{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch + 1, ISR: st.ISR, LeaderRecoveryState: st.LeaderRecoveryState})
		for _, r := range ra.Adding {
			if s.reachable(r) {
				a.addLeaderAndISR(r, tp, true)
			}
		}
		return
	}
	done := ReplicaAssignment{Replicas: ra.Target()}
	s.setAssignment(a, tp, done) // B2 (the znode write of B6 goes with it)
	if started {
		s.moveLeaderIfRequired(a, tp) // B3
	}
	if len(ra.Removing) > 0 {
		s.removeReplicas(a, tp, ra.Removing) // B4, B5
	}
	a.ZkReassignmentDone = append(a.ZkReassignmentDone, ReassignmentDone{TP: tp, Replicas: done.Replicas}) // B7
	if started {
		a.updateAll(s, tp) // B8
	}
}

// moveLeaderIfRequired is Kafka's moveReassignedPartitionLeaderIfRequired:
// a leader outside the new replicas, or dead, gives way to the first
// replica of RS that is live and in the ISR (ReassignPartitionLeaderElection);
// a live leader in RS keeps leading under a new epoch, so it learns the
// shrunk RS and never adds a removed replica back to the ISR.
func (s *ClusterState) moveLeaderIfRequired(a *Actions, tp TP) {
	t := s.Topics[tp.Topic]
	st := t.States[tp.Partition]
	rs := t.Replicas[tp.Partition]
	next := PartitionState{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch + 1, ISR: st.ISR, LeaderRecoveryState: st.LeaderRecoveryState}
	if !slices.Contains(rs, st.Leader) || !s.isLive(st.Leader) {
		i := slices.IndexFunc(rs, func(r int32) bool { return s.isLive(r) && slices.Contains(st.ISR, r) })
		if i < 0 {
			return // Kafka's election fails and the leader stays as it is
		}
		next.Leader = rs[i]
	}
	s.changeState(a, tp, next)
}

// removeReplicas moves replicas out of a partition, as Kafka's replica
// state machine does from OfflineReplica to NonExistentReplica: each leaves
// the ISR under a new leader epoch (a removed leader leaves the partition
// leaderless; the last ISR member stays), then gets StopReplica with
// delete.
func (s *ClusterState) removeReplicas(a *Actions, tp TP, removed []int32) {
	t := s.Topics[tp.Topic]
	for _, r := range removed {
		st, ok := t.States[tp.Partition]
		if ok && slices.Contains(st.ISR, r) {
			leader := st.Leader
			if leader == r {
				leader = NoLeader
			}
			isr := st.ISR
			if len(isr) > 1 {
				isr = minus(isr, []int32{r})
			}
			s.changeState(a, tp, PartitionState{Leader: leader, LeaderEpoch: st.LeaderEpoch + 1, ISR: isr, LeaderRecoveryState: st.LeaderRecoveryState})
		}
		if s.reachable(r) {
			a.RemoveReplicas[r] = append(a.RemoveReplicas[r], tp)
		}
	}
}

// maybeCompleteReassignment is Kafka's check after an ISR change of a
// partition being reassigned.
func (s *ClusterState) maybeCompleteReassignment(a *Actions, tp TP) {
	ra := s.Assignment(tp)
	if ra.Reassigning() && s.reassignmentComplete(tp, ra) {
		s.onPartitionReassignment(a, tp, ra)
	}
}

// Reassigning lists the partitions being reassigned, sorted.
func (s *ClusterState) Reassigning() []TP {
	var out []TP
	for _, tp := range s.AllPartitions() {
		if s.Assignment(tp).Reassigning() {
			out = append(out, tp)
		}
	}
	return out
}

// ResumeReassignments restarts the reassignments in progress for which
// resume is true (Kafka's maybeResumeReassignments), at controller start
// for those not in /admin/reassign_partitions and at broker start for
// those whose target includes the new broker.
func (s *ClusterState) ResumeReassignments(resume func(TP, ReplicaAssignment) bool) Actions {
	a := newActions()
	for _, tp := range s.Reassigning() {
		if ra := s.Assignment(tp); resume(tp, ra) && !s.Deleting[tp.Topic] {
			s.onPartitionReassignment(&a, tp, ra)
		}
	}
	return a
}

// ListReassignments answers ListPartitionReassignments: the named
// partitions (nil: all) that are being reassigned.
func (s *ClusterState) ListReassignments(tps []TP) map[TP]ReplicaAssignment {
	if tps == nil {
		tps = s.Reassigning()
	}
	out := map[TP]ReplicaAssignment{}
	for _, tp := range tps {
		if ra := s.Assignment(tp); ra.Reassigning() {
			out[tp] = ra
		}
	}
	return out
}

// TopicReassigning reports whether any partition of topic is being reassigned.
func (s *ClusterState) TopicReassigning(topic string) bool {
	t := s.Topics[topic]
	return t != nil && (len(t.Adding) > 0 || len(t.Removing) > 0)
}

func sortedTPKeys[V any](m map[TP]V) []TP {
	out := make([]TP, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sortTPs(out)
	return out
}
