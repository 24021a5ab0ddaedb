package controller

import (
	"reflect"
	"testing"
)

// offlineCluster is topic t with replicas [1 2] whose ISR shrank to the
// leader 1; broker 2 (out of sync) is live.
func offlineCluster() *ClusterState {
	return cluster([]int32{1, 2}, map[int32][]int32{0: {1, 2}}, map[int32]PartitionState{
		0: {Leader: 1, LeaderEpoch: 5, ISR: []int32{1}, ZkVersion: 4},
	})
}

func TestResolveUncleanDefault(t *testing.T) {
	on := map[string]string{UncleanLeaderElectionConfig: "true"}
	off := map[string]string{UncleanLeaderElectionConfig: "false"}
	tests := []struct {
		name                      string
		static                    bool
		perBroker, clusterDefault map[string]string
		want                      bool
	}{
		{"static only", true, nil, nil, true},
		{"static off", false, nil, nil, false},
		{"cluster default over static", true, nil, off, false},
		{"cluster default enables", false, nil, on, true},
		{"per broker over cluster default", false, on, off, true},
		{"other configs leave static", true, map[string]string{"log.retention.ms": "1"}, map[string]string{"min.insync.replicas": "2"}, true},
		{"case and blanks ignored", false, nil, map[string]string{UncleanLeaderElectionConfig: " TRUE "}, true},
	}
	for _, tc := range tests {
		if got := ResolveUncleanDefault(tc.static, tc.perBroker, tc.clusterDefault); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestUncleanResolvedPerTopic: when the last ISR member dies, whether the
// out-of-sync replica leads follows the topic override first, then the
// broker-level default. Kafka's precedence; Brook once read only the
// static broker value, losing acknowledged data with broker=true and
// topic=false.
func TestUncleanResolvedPerTopic(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name       string
		def        bool
		override   *bool
		wantLeader int32
	}{
		{"broker true, topic false: stays offline", true, &no, NoLeader},
		{"broker false, topic true: replica 2 leads", false, &yes, 2},
		{"broker true, no override: replica 2 leads", true, nil, 2},
		{"broker false, no override: stays offline", false, nil, NoLeader},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := offlineCluster()
			s.UncleanDefault = tc.def
			s.Topics["t"].UncleanOverride = tc.override
			s.OnBrokersChange(map[int32]BrokerInfo{2: s.Live[2]})
			if got := s.Topics["t"].States[0]; got.Leader != tc.wantLeader {
				t.Fatalf("leader %d, want %d (state %+v)", got.Leader, tc.wantLeader, got)
			}
			// A new controller decides the same from the same state.
			s = offlineCluster()
			s.UncleanDefault = tc.def
			s.Topics["t"].UncleanOverride = tc.override
			delete(s.Live, 1)
			s.OnElected()
			if got := s.Topics["t"].States[0]; got.Leader != tc.wantLeader {
				t.Fatalf("after failover: leader %d, want %d (state %+v)", got.Leader, tc.wantLeader, got)
			}
		})
	}
}

// TestOnTopicConfigEnablesUnclean: a partition left offline because
// unclean election was off gets the out-of-sync replica as leader once the
// topic's override turns it on, as Kafka's enableTopicUncleanLeaderElection.
func TestOnTopicConfigEnablesUnclean(t *testing.T) {
	s := offlineCluster()
	s.UncleanDefault = true
	s.Topics["t"].UncleanOverride = new(bool) // false
	s.OnBrokersChange(map[int32]BrokerInfo{2: s.Live[2]})
	if got := s.Topics["t"].States[0]; got.Leader != NoLeader {
		t.Fatalf("leader %d with unclean off for the topic", got.Leader)
	}
	// Dropping the override makes the broker default (true) apply.
	if a := s.OnTopicConfig("t", map[string]string{"retention.ms": "5"}); len(a.Writes) != 1 {
		t.Fatalf("override removed under default true: writes %+v, want one", a.Writes)
	}
	if got := s.Topics["t"].States[0]; got.Leader != 2 {
		t.Fatalf("override removed under default true: leader %d, want 2", got.Leader)
	}

	s = offlineCluster()
	s.OnBrokersChange(map[int32]BrokerInfo{2: s.Live[2]})
	if a := s.OnTopicConfig("t", map[string]string{UncleanLeaderElectionConfig: "false"}); len(a.Writes) != 0 {
		t.Fatalf("unclean still off, yet writes %+v", a.Writes)
	}
	a := s.OnTopicConfig("t", map[string]string{UncleanLeaderElectionConfig: "true"})
	want := PartitionState{Leader: 2, LeaderEpoch: 7, ISR: []int32{2}, ControllerEpoch: 3, ZkVersion: 6}
	if got := s.Topics["t"].States[0]; !reflect.DeepEqual(got, want) {
		t.Fatalf("state %+v, want %+v", got, want)
	}
	if len(a.Writes) != 1 || a.Writes[0].ExpectedVersion != 5 {
		t.Fatalf("writes %+v, want one fenced by version 5", a.Writes)
	}
	if got := keys(a.LeaderAndISR[2]); !reflect.DeepEqual(got, []TP{{"t", 0}}) {
		t.Fatalf("leaderAndISR to 2: %v", got)
	}
	if !a.UpdateMetadata[2][TP{"t", 0}] {
		t.Fatal("no metadata update for the new leader")
	}
	// A led partition is left alone.
	if a := s.OnTopicConfig("t", map[string]string{UncleanLeaderElectionConfig: "true"}); len(a.Writes) != 0 {
		t.Fatalf("led partition re-elected: %+v", a.Writes)
	}
	if a := s.OnTopicConfig("unknown", map[string]string{UncleanLeaderElectionConfig: "true"}); !a.Empty() {
		t.Fatalf("unknown topic: %+v", a)
	}
}

// TestOnUncleanDefault: turning on the broker-level default elects offline
// partitions of topics without an override, and not of topics whose
// override keeps it off.
func TestOnUncleanDefault(t *testing.T) {
	s := offlineCluster()
	s.Topics["u"] = &TopicState{ID: [16]byte{8}, Replicas: map[int32][]int32{0: {1, 2}}, States: map[int32]PartitionState{
		0: {Leader: 1, LeaderEpoch: 1, ISR: []int32{1}},
	}, UncleanOverride: new(bool)}
	s.OnBrokersChange(map[int32]BrokerInfo{2: s.Live[2]})
	if a := s.OnUncleanDefault(false); len(a.Writes) != 0 {
		t.Fatalf("default still off, yet writes %+v", a.Writes)
	}
	a := s.OnUncleanDefault(true)
	if got := s.Topics["t"].States[0].Leader; got != 2 {
		t.Errorf("t-0 leader %d, want 2", got)
	}
	if got := s.Topics["u"].States[0].Leader; got != NoLeader {
		t.Errorf("u-0 leader %d, want none: its override is false", got)
	}
	if len(a.Writes) != 1 || a.Writes[0].TP != (TP{"t", 0}) {
		t.Fatalf("writes %+v, want only t-0", a.Writes)
	}
}
