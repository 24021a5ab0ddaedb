package controller

import (
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestReassignTo(t *testing.T) {
	tests := []struct {
		name   string
		from   ReplicaAssignment
		target []int32
		want   ReplicaAssignment
	}{
		{"move one replica", ReplicaAssignment{Replicas: []int32{1, 2, 3}}, []int32{2, 3, 4},
			ReplicaAssignment{Replicas: []int32{2, 3, 4, 1}, Adding: []int32{4}, Removing: []int32{1}}},
		{"grow replication factor", ReplicaAssignment{Replicas: []int32{1, 2}}, []int32{1, 2, 3},
			ReplicaAssignment{Replicas: []int32{1, 2, 3}, Adding: []int32{3}}},
		{"shrink replication factor", ReplicaAssignment{Replicas: []int32{1, 2, 3}}, []int32{3, 1},
			ReplicaAssignment{Replicas: []int32{3, 1, 2}, Removing: []int32{2}}},
		{"replace a reassignment: computed from the origin", ReplicaAssignment{Replicas: []int32{2, 3, 4, 1}, Adding: []int32{4}, Removing: []int32{1}}, []int32{1, 2, 5},
			ReplicaAssignment{Replicas: []int32{1, 2, 5, 3}, Adding: []int32{5}, Removing: []int32{3}}},
		{"back to the origin", ReplicaAssignment{Replicas: []int32{2, 3, 4, 1}, Adding: []int32{4}, Removing: []int32{1}}, []int32{2, 3, 1},
			ReplicaAssignment{Replicas: []int32{2, 3, 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.from.ReassignTo(tc.target)
			if !got.equal(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if !slices.Equal(got.Target(), tc.target) && !slices.Equal(distinct(got.Target()), tc.target) {
				t.Fatalf("target %v, want %v", got.Target(), tc.target)
			}
		})
	}
}

func TestAlterReassignmentsErrors(t *testing.T) {
	st := PartitionState{Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2}, ZkVersion: 7}
	tests := []struct {
		name     string
		req      ReassignmentRequest
		allowRF  bool
		deleting bool
		wantCode int16
	}{
		{"empty list", ReassignmentRequest{TP{"t", 0}, []int32{}}, true, false, kerr.InvalidReplicaAssignment.Code},
		{"duplicates", ReassignmentRequest{TP{"t", 0}, []int32{1, 1}}, true, false, kerr.InvalidReplicaAssignment.Code},
		{"negative id", ReassignmentRequest{TP{"t", 0}, []int32{1, -3}}, true, false, kerr.InvalidReplicaAssignment.Code},
		{"adding a dead broker", ReassignmentRequest{TP{"t", 0}, []int32{1, 9}}, true, false, kerr.InvalidReplicaAssignment.Code},
		{"unknown partition", ReassignmentRequest{TP{"t", 4}, []int32{1, 2}}, true, false, kerr.UnknownTopicOrPartition.Code},
		{"unknown topic", ReassignmentRequest{TP{"nope", 0}, []int32{1, 2}}, true, false, kerr.UnknownTopicOrPartition.Code},
		{"topic being deleted", ReassignmentRequest{TP{"t", 0}, []int32{2, 3}}, true, true, kerr.UnknownTopicOrPartition.Code},
		{"cancel without reassignment", ReassignmentRequest{TP{"t", 0}, nil}, true, false, kerr.NoReassignmentInProgress.Code},
		{"cancel of an unknown partition", ReassignmentRequest{TP{"t", 9}, nil}, true, false, kerr.NoReassignmentInProgress.Code},
		{"rf change not allowed (v1)", ReassignmentRequest{TP{"t", 0}, []int32{1, 2, 3}}, false, false, kerr.InvalidReplicationFactor.Code},
		{"same rf allowed (v1)", ReassignmentRequest{TP{"t", 0}, []int32{2, 3}}, false, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := cluster([]int32{1, 2, 3}, map[int32][]int32{0: {1, 2}}, map[int32]PartitionState{0: st})
			if tc.deleting {
				s.Deleting["t"] = true
			}
			res, a := s.OnAlterReassignments([]ReassignmentRequest{tc.req}, tc.allowRF)
			got := res[tc.req.TP]
			if got.Code != tc.wantCode {
				t.Fatalf("code %v (%q), want %v", kerr.ErrorForCode(got.Code), got.Message, kerr.ErrorForCode(tc.wantCode))
			}
			if tc.wantCode != 0 && (len(a.Writes) > 0 || len(a.Assignments) > 0) {
				t.Fatalf("failed request wrote %+v", a)
			}
		})
	}
}

// alterISR is the AlterPartition a leader sends to grow or shrink the ISR.
func alterISR(s *ClusterState, tp TP, leader int32, isr ...int32) (*kmsg.AlterPartitionResponse, Actions) {
	st := s.Topics[tp.Topic].States[tp.Partition]
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch = leader, s.Live[leader].Epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic = tp.Topic
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = tp.Partition, st.LeaderEpoch, st.ZkVersion, isr
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return s.OnAlterPartition(req)
}

func writtenStates(a Actions) []PartitionState {
	var out []PartitionState
	for _, w := range a.Writes {
		out = append(out, w.State)
	}
	return out
}

func lai(a Actions) map[int32]bool {
	out := map[int32]bool{}
	for id, m := range a.LeaderAndISR {
		for _, isNew := range m {
			out[id] = out[id] || isNew
		}
	}
	return out
}

// TestReassignmentMovesLeaderOff walks Kafka's steps for moving a
// partition from brokers 1,2,3 to 2,3,4 while 1 leads.
func TestReassignmentMovesLeaderOff(t *testing.T) {
	tp := TP{"t", 0}
	s := cluster([]int32{1, 2, 3, 4}, map[int32][]int32{0: {1, 2, 3}}, map[int32]PartitionState{0: {Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2, 3}, ZkVersion: 7, ControllerEpoch: 3}})

	res, a := s.OnAlterReassignments([]ReassignmentRequest{{tp, []int32{2, 3, 4}}}, true)
	if res[tp].Code != 0 {
		t.Fatalf("reassign: %+v", res[tp])
	}
	// U1/U2: RS = TRS + ORS, AR, RR in the state and the topic znode.
	if got := s.Assignment(tp); !got.equal(ReplicaAssignment{Replicas: []int32{2, 3, 4, 1}, Adding: []int32{4}, Removing: []int32{1}}) {
		t.Fatalf("assignment %+v", got)
	}
	if !slices.Equal(a.Assignments, []string{"t"}) {
		t.Fatalf("assignments written %v", a.Assignments)
	}
	// A1: a new leader epoch, same leader and ISR; LeaderAndISR to ORS and,
	// as new replicas, to AR.
	if want := []PartitionState{{Leader: 1, LeaderEpoch: 6, ISR: []int32{1, 2, 3}, ControllerEpoch: 3}}; !reflect.DeepEqual(writtenStates(a), want) {
		t.Fatalf("phase A writes %+v", writtenStates(a))
	}
	if want := map[int32]bool{1: false, 2: false, 3: false, 4: true}; !reflect.DeepEqual(lai(a), want) {
		t.Fatalf("phase A LeaderAndISR %v", lai(a))
	}
	if len(a.RemoveReplicas) != 0 {
		t.Fatalf("removed replicas too early: %v", a.RemoveReplicas)
	}
	// The ZooKeeper entry (if any) gives way to the API request.
	if want := []ReassignmentDone{{TP: tp}}; !reflect.DeepEqual(a.ZkReassignmentDone, want) {
		t.Fatalf("zk entries dropped %+v", a.ZkReassignmentDone)
	}
	if got := s.ListReassignments(nil); len(got) != 1 {
		t.Fatalf("list %+v", got)
	}

	// An ISR change without broker 4 completes nothing.
	_, a = alterISR(s, tp, 1, 1, 2)
	if s.Assignment(tp).equal(ReplicaAssignment{Replicas: []int32{2, 3, 4}}) || len(a.Assignments) > 0 {
		t.Fatal("completed before the target was in the ISR")
	}
	_, a = alterISR(s, tp, 1, 1, 2, 3, 4)
	// B: RS = TRS; leader 1 is leaving: 2 (first of TRS in the ISR) leads;
	// 1 leaves the ISR and is deleted.
	if got := s.Assignment(tp); !got.equal(ReplicaAssignment{Replicas: []int32{2, 3, 4}}) {
		t.Fatalf("completed assignment %+v", got)
	}
	want := []PartitionState{
		{Leader: 1, LeaderEpoch: 6, ISR: []int32{1, 2, 3, 4}, ControllerEpoch: 3}, // the AlterPartition
		{Leader: 2, LeaderEpoch: 7, ISR: []int32{1, 2, 3, 4}, ControllerEpoch: 3}, // B3
		{Leader: 2, LeaderEpoch: 8, ISR: []int32{2, 3, 4}, ControllerEpoch: 3},    // B4
	}
	if !reflect.DeepEqual(writtenStates(a), want) {
		t.Fatalf("phase B writes %+v", writtenStates(a))
	}
	for i, w := range a.Writes[1:] {
		if w.ExpectedVersion != a.Writes[i].ExpectedVersion+1 {
			t.Fatalf("writes not chained by version: %+v", a.Writes)
		}
	}
	if _, ok := a.LeaderAndISR[1]; ok {
		t.Fatal("removed replica got LeaderAndISR")
	}
	if !reflect.DeepEqual(a.RemoveReplicas, map[int32][]TP{1: {tp}}) {
		t.Fatalf("StopReplica %v", a.RemoveReplicas)
	}
	if want := []ReassignmentDone{{TP: tp, Replicas: []int32{2, 3, 4}}}; !reflect.DeepEqual(a.ZkReassignmentDone, want) {
		t.Fatalf("zk entries done %+v", a.ZkReassignmentDone)
	}
	if len(a.UpdateMetadata) != 4 {
		t.Fatalf("UpdateMetadata to %v", brokersOf(a.UpdateMetadata))
	}
	if got := s.ListReassignments(nil); len(got) != 0 {
		t.Fatalf("still listed: %+v", got)
	}
	if stop := BuildRemoveReplicas(s, 1, a.RemoveReplicas[1]); stop.Topics[0].PartitionStates[0].LeaderEpoch != 8 || !stop.Topics[0].PartitionStates[0].Delete {
		t.Fatalf("StopReplica %+v", stop.Topics[0].PartitionStates[0])
	}
}

func TestReassignmentReplicationFactor(t *testing.T) {
	tp := TP{"t", 0}
	t.Run("grow", func(t *testing.T) {
		s := cluster([]int32{1, 2, 3}, map[int32][]int32{0: {1, 2}}, map[int32]PartitionState{0: {Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2}}})
		s.OnAlterReassignments([]ReassignmentRequest{{tp, []int32{1, 2, 3}}}, true)
		_, a := alterISR(s, tp, 1, 1, 2, 3)
		if got := s.Assignment(tp); !got.equal(ReplicaAssignment{Replicas: []int32{1, 2, 3}}) {
			t.Fatalf("assignment %+v", got)
		}
		if len(a.RemoveReplicas) != 0 || s.Topics["t"].States[0].Leader != 1 {
			t.Fatalf("grow removed %v, leader %d", a.RemoveReplicas, s.Topics["t"].States[0].Leader)
		}
	})
	t.Run("shrink completes at once", func(t *testing.T) {
		s := cluster([]int32{1, 2, 3}, map[int32][]int32{0: {1, 2, 3}}, map[int32]PartitionState{0: {Leader: 1, LeaderEpoch: 2, ISR: []int32{1, 2, 3}}})
		_, a := s.OnAlterReassignments([]ReassignmentRequest{{tp, []int32{1, 2}}}, true)
		if got := s.Assignment(tp); !got.equal(ReplicaAssignment{Replicas: []int32{1, 2}}) {
			t.Fatalf("assignment %+v", got)
		}
		if st := s.Topics["t"].States[0]; st.Leader != 1 || !slices.Equal(st.ISR, []int32{1, 2}) || st.LeaderEpoch != 4 {
			t.Fatalf("state %+v", st)
		}
		if !reflect.DeepEqual(a.RemoveReplicas, map[int32][]TP{3: {tp}}) {
			t.Fatalf("StopReplica %v", a.RemoveReplicas)
		}
	})
}

func TestReassignmentCancel(t *testing.T) {
	tp := TP{"t", 0}
	s := cluster([]int32{1, 2, 3, 4}, map[int32][]int32{0: {1, 2, 3}}, map[int32]PartitionState{0: {Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2, 3}}})
	s.OnAlterReassignments([]ReassignmentRequest{{tp, []int32{2, 3, 4}}}, true)
	res, a := s.OnAlterReassignments([]ReassignmentRequest{{tp, nil}}, true)
	if res[tp].Code != 0 {
		t.Fatalf("cancel: %+v", res[tp])
	}
	// Back to ORS = RS - AR, in RS's order as Kafka computes it (the
	// original order is not kept); U3 stops the replica the reassignment
	// had added.
	if got := s.Assignment(tp); !got.equal(ReplicaAssignment{Replicas: []int32{2, 3, 1}}) {
		t.Fatalf("assignment %+v", got)
	}
	if !reflect.DeepEqual(a.RemoveReplicas, map[int32][]TP{4: {tp}}) {
		t.Fatalf("StopReplica %v", a.RemoveReplicas)
	}
	if st := s.Topics["t"].States[0]; st.Leader != 1 || !slices.Equal(st.ISR, []int32{1, 2, 3}) {
		t.Fatalf("state %+v", st)
	}
	if res, _ := s.OnAlterReassignments([]ReassignmentRequest{{tp, nil}}, true); res[tp].Code != kerr.NoReassignmentInProgress.Code {
		t.Fatalf("second cancel: %+v", res[tp])
	}
}

// TestReassignmentResumes: reassignments recorded in the topic znode go on
// at controller start and when a target broker starts.
func TestReassignmentResumes(t *testing.T) {
	s := cluster([]int32{1, 2, 3}, map[int32][]int32{0: {2, 3, 4, 1}}, map[int32]PartitionState{0: {Leader: 1, LeaderEpoch: 5, ISR: []int32{1, 2, 3}}})
	s.Topics["t"].Adding = map[int32][]int32{0: {4}}
	s.Topics["t"].Removing = map[int32][]int32{0: {1}}
	a := s.ResumeReassignments(func(TP, ReplicaAssignment) bool { return true })
	if want := map[int32]bool{1: false, 2: false, 3: false}; !reflect.DeepEqual(lai(a), want) {
		t.Fatalf("resume at start: LeaderAndISR %v", lai(a))
	}
	live := map[int32]BrokerInfo{}
	for id, b := range s.Live {
		live[id] = b
	}
	live[4] = BrokerInfo{ID: 4, Epoch: 104}
	a = s.OnBrokersChange(live)
	if !lai(a)[4] {
		t.Fatalf("new target broker not started as a new replica: %v", a.LeaderAndISR)
	}
	if s.Topics["t"].States[0].LeaderEpoch != 7 {
		t.Fatalf("leader epoch %d", s.Topics["t"].States[0].LeaderEpoch)
	}
}

func TestZkReassignments(t *testing.T) {
	s := cluster([]int32{1, 2, 3}, map[int32][]int32{0: {1, 2}}, map[int32]PartitionState{0: {Leader: 1, ISR: []int32{1, 2}}})
	res, a := s.OnZkReassignments(map[TP][]int32{{"t", 0}: {2, 3}, {"t", 7}: {1}})
	if res[TP{"t", 0}].Code != 0 || res[TP{"t", 7}].Code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("results %+v", res)
	}
	// Only the failed entry leaves the znode now; the other when it completes.
	if want := []ReassignmentDone{{TP: TP{"t", 7}}}; !reflect.DeepEqual(a.ZkReassignmentDone, want) {
		t.Fatalf("done %+v", a.ZkReassignmentDone)
	}
}

func TestReassignmentZnodeJSON(t *testing.T) {
	in := []byte(`{"version":1,"partitions":[{"topic":"a","partition":1,"replicas":[3,1],"log_dirs":["any","any"]},{"topic":"b","partition":0,"replicas":[2]}]}`)
	m, err := decodeReassignment(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[TP][]int32{{"a", 1}: {3, 1}, {"b", 0}: {2}}; !reflect.DeepEqual(m, want) {
		t.Fatalf("decoded %v", m)
	}
	if got := string(encodeReassignment(m)); got != `{"version":1,"partitions":[{"topic":"a","partition":1,"replicas":[3,1]},{"topic":"b","partition":0,"replicas":[2]}]}` {
		t.Fatalf("encoded %s", got)
	}
	for _, bad := range []string{`{`, `{"partitions":[{"topic":"","partition":0,"replicas":[1]}]}`, `{"partitions":[{"topic":"a","partition":-1,"replicas":[1]}]}`, `{"partitions":[{"topic":"a","partition":0}]}`} {
		if _, err := decodeReassignment([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}
