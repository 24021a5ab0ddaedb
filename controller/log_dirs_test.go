package controller

import (
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Replicas a broker reports in failed log dirs lose leadership and ISR
// membership, show in the metadata as offline, and come back only when
// the broker registers again.
func TestOnReplicasOffline(t *testing.T) {
	tp0, tp1 := TP{"t", 0}, TP{"t", 1}
	s := cluster([]int32{1, 2, 3}, map[int32][]int32{0: {1, 2, 3}, 1: {2, 1, 3}}, map[int32]PartitionState{
		0: {Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, ZkVersion: 7},
		1: {Leader: 2, LeaderEpoch: 2, ISR: []int32{2, 1, 3}, ZkVersion: 3},
	})
	a := s.OnReplicasOffline(1, []TP{tp0, tp1})
	if st := s.Topics["t"].States[0]; st.Leader != 2 || st.LeaderEpoch != 5 || !reflect.DeepEqual(st.ISR, []int32{2, 3}) {
		t.Fatalf("partition 0 (led by the offline replica): %+v", st)
	}
	if st := s.Topics["t"].States[1]; st.Leader != 2 || st.LeaderEpoch != 3 || !reflect.DeepEqual(st.ISR, []int32{2, 3}) {
		t.Fatalf("partition 1 (followed): %+v", st)
	}
	_, toLeader := a.LeaderAndISR[2][tp0]
	_, toFollower := a.LeaderAndISR[3][tp1]
	if len(a.Writes) != 2 || !toLeader || !toFollower {
		t.Fatalf("actions %+v", a)
	}
	um := BuildUpdateMetadata(s, 2, map[TP]bool{tp0: true})
	if got := um.TopicStates[0].PartitionStates[0].OfflineReplicas; !slices.Equal(got, []int32{1}) {
		t.Fatalf("offline replicas in UpdateMetadata: %v", got)
	}
	// A repeat changes nothing; the replica cannot come back as leader.
	if a := s.OnReplicasOffline(1, []TP{tp0}); !a.Empty() {
		t.Fatalf("repeat: %+v", a)
	}
	s.OnReplicasOffline(2, []TP{tp0})
	if st := s.Topics["t"].States[0]; st.Leader != 3 || !reflect.DeepEqual(st.ISR, []int32{3}) {
		t.Fatalf("after 2 goes offline too: %+v", st)
	}
	// Preferred election: 1 is in no ISR now; put it back to check that
	// being offline alone refuses it.
	st := s.Topics["t"].States[0]
	st.ISR = []int32{3, 1}
	s.Topics["t"].States[0] = st
	res, _ := s.OnElectLeaders(ElectPreferred, []TP{tp0})
	if res[tp0].ErrorCode != kerr.PreferredLeaderNotAvailable.Code {
		t.Fatalf("preferred election onto an offline replica: %+v", res[tp0])
	}
	// Broker 1 restarts (new epoch): its replicas count again.
	live := map[int32]BrokerInfo{}
	for id, b := range s.Live {
		live[id] = b
	}
	live[1] = BrokerInfo{ID: 1, Epoch: 500}
	s.OnBrokersChange(live)
	if s.Offline[1] != nil || !s.replicaOnline(1, tp0) || s.replicaOnline(2, tp0) {
		t.Fatalf("offline after restart: %v", s.Offline)
	}
}

// The leader may propose putting an offline replica back into the ISR
// right after the controller took it out: a fetch the follower sent
// before its dir failed can still complete at the leader afterwards. The
// controller refuses it from the moment it knows the replica is offline,
// for that partition only, until the broker registers again.
func TestAlterPartitionRefusesOfflineReplica(t *testing.T) {
	s := cluster([]int32{1, 2, 3}, map[int32][]int32{0: {1, 2, 3}, 1: {1, 2, 3}}, map[int32]PartitionState{
		0: {Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, ZkVersion: 7},
		1: {Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 3}, ZkVersion: 7},
	})
	s.OnReplicasOffline(2, []TP{{"t", 0}})
	st := s.Topics["t"].States[0]
	if !reflect.DeepEqual(st.ISR, []int32{1, 3}) {
		t.Fatalf("after the shrink: %+v", st)
	}
	for _, v := range []int16{0, 2, 3} {
		req := alterReq(v, 1, 101, st.LeaderEpoch, st.ZkVersion, 1, 3, 2)
		resp, a := s.OnAlterPartition(req)
		want := kerr.IneligibleReplica.Code
		if v == 0 {
			want = kerr.OperationNotAttempted.Code
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != want || len(a.Writes) != 0 {
			t.Fatalf("v%d: adding the offline replica back: error %d (want %d), writes %+v", v, code, want, a.Writes)
		}
	}
	// Its replica of partition 1 is in a healthy dir and may join.
	req := alterReq(3, 1, 101, 4, 7, 1, 3, 2)
	req.Topics[0].Partitions[0].Partition = 1
	if resp, _ := s.OnAlterPartition(req); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("partition 1: %+v", resp.Topics[0].Partitions[0])
	}
	// Registered again (a restart), the replica may join once more.
	live := maps.Clone(s.Live)
	live[2] = BrokerInfo{ID: 2, Epoch: 500}
	s.OnBrokersChange(live)
	st = s.Topics["t"].States[0]
	if resp, _ := s.OnAlterPartition(alterReq(3, 1, 101, st.LeaderEpoch, st.ZkVersion, 1, 3, 2)); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("after the restart: %+v", resp.Topics[0].Partitions[0])
	}
}

// A log dir event makes the controller ask the broker for all its
// replicas; the KAFKA_STORAGE_ERROR answers take them offline.
func TestLogDirEventAsksTheBroker(t *testing.T) {
	s := cluster([]int32{1, 2}, map[int32][]int32{0: {1, 2}, 1: {2}}, map[int32]PartitionState{
		0: {Leader: 1, ISR: []int32{1, 2}}, 1: {Leader: 2, ISR: []int32{2}},
	})
	a := s.OnLogDirFailure([]int32{1, 9})
	if !reflect.DeepEqual(a.LeaderAndISR, map[int32]map[TP]bool{1: {{"t", 0}: false}}) {
		t.Fatalf("LeaderAndISR %v", a.LeaderAndISR)
	}
	resp := kmsg.NewPtrLeaderAndISRResponse()
	resp.SetVersion(5)
	rt := kmsg.NewLeaderAndISRResponseTopic()
	rt.TopicID = [16]byte{9}
	for p, code := range []int16{kerr.KafkaStorageError.Code, 0} {
		rp := kmsg.NewLeaderAndISRResponseTopicPartition()
		rp.Partition, rp.ErrorCode = int32(p), code // v5+ answers carry no topic name
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	names := func(id [16]byte) (string, bool) { return "t", id == [16]byte{9} }
	if got := storageErrors(resp, names); !reflect.DeepEqual(got, []TP{{"t", 0}}) {
		t.Fatalf("storage errors %v", got)
	}
}

// The notification has Kafka's znode name and JSON.
func TestNotifyLogDirFailureZnode(t *testing.T) {
	ctx := context.Background()
	s := testDB(t).NewSession()
	if _, err := s.Create(ctx, LogDirEventPath, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := NotifyLogDirFailure(ctx, s, 3); err != nil {
		t.Fatal(err)
	}
	kids, _, err := s.Children(ctx, LogDirEventPath)
	if err != nil || !reflect.DeepEqual(kids, []string{"log_dir_event_0000000000"}) {
		t.Fatalf("children %v %v", kids, err)
	}
	data, _, err := s.Get(ctx, LogDirEventPath+"/"+kids[0])
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil || !reflect.DeepEqual(got, map[string]any{"version": 1.0, "broker": 3.0, "event": 1.0}) {
		t.Fatalf("json %s: %v", data, err)
	}
}
