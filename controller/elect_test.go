package controller

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOnElectLeaders(t *testing.T) {
	ps := func(leader, epoch int32, isr ...int32) PartitionState {
		return PartitionState{Leader: leader, LeaderEpoch: epoch, ISR: isr, ZkVersion: 2}
	}
	tests := []struct {
		name     string
		typ      int8
		live     []int32
		state    PartitionState
		wantCode int16
		want     PartitionState // when elected
	}{
		{name: "preferred takes over", typ: ElectPreferred, live: []int32{1, 2}, state: ps(2, 3, 2, 1), want: PartitionState{Leader: 1, LeaderEpoch: 4, ISR: []int32{2, 1}, ControllerEpoch: 3, ZkVersion: 3}},
		{name: "preferred already leads", typ: ElectPreferred, live: []int32{1, 2}, state: ps(1, 3, 1, 2), wantCode: kerr.ElectionNotNeeded.Code},
		{name: "preferred out of isr", typ: ElectPreferred, live: []int32{1, 2}, state: ps(2, 3, 2), wantCode: kerr.PreferredLeaderNotAvailable.Code},
		{name: "preferred dead", typ: ElectPreferred, live: []int32{2}, state: ps(2, 3, 2, 1), wantCode: kerr.PreferredLeaderNotAvailable.Code},
		{name: "unclean with live leader", typ: ElectUnclean, live: []int32{1, 2}, state: ps(2, 3, 2), wantCode: kerr.ElectionNotNeeded.Code},
		{name: "unclean elects out-of-sync replica", typ: ElectUnclean, live: []int32{2}, state: ps(NoLeader, 3, 1), want: PartitionState{Leader: 2, LeaderEpoch: 4, ISR: []int32{2}, ControllerEpoch: 3, LeaderRecoveryState: 1, ZkVersion: 3}},
		{name: "unclean nothing live", typ: ElectUnclean, live: nil, state: ps(NoLeader, 3, 1), wantCode: kerr.EligibleLeadersNotAvailable.Code},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := cluster(tc.live, map[int32][]int32{0: {1, 2}}, map[int32]PartitionState{0: tc.state})
			res, a := s.OnElectLeaders(tc.typ, []TP{{"t", 0}, {"t", 9}})
			if res[TP{"t", 9}].ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("unknown partition: %+v", res[TP{"t", 9}])
			}
			if got := res[TP{"t", 0}]; got.ErrorCode != tc.wantCode {
				t.Fatalf("result %+v, want code %d", got, tc.wantCode)
			}
			if tc.wantCode != 0 {
				if len(a.Writes) != 0 {
					t.Fatalf("writes %+v", a.Writes)
				}
				return
			}
			if got := s.Topics["t"].States[0]; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("state %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestImbalancedPartitions(t *testing.T) {
	// Broker 1 prefers 4 partitions and leads 2 of them (50% imbalance);
	// broker 2 prefers 10 and leads 9 (10%, not above the threshold).
	replicas := map[int32][]int32{}
	states := map[int32]PartitionState{}
	for p := range int32(4) {
		replicas[p] = []int32{1, 2}
		states[p] = PartitionState{Leader: 1, ISR: []int32{1, 2}}
	}
	states[2] = PartitionState{Leader: 2, ISR: []int32{2, 1}}
	states[3] = PartitionState{Leader: 2, ISR: []int32{2}} // 1 out of sync: cannot move
	for p := int32(4); p < 14; p++ {
		replicas[p] = []int32{2, 1}
		states[p] = PartitionState{Leader: 2, ISR: []int32{2, 1}}
	}
	states[13] = PartitionState{Leader: 1, ISR: []int32{1, 2}}
	s := cluster([]int32{1, 2}, replicas, states)
	if got := s.ImbalancedPartitions(10); !reflect.DeepEqual(got, []TP{{"t", 2}}) {
		t.Fatalf("got %v", got)
	}
	if got := s.ImbalancedPartitions(5); !reflect.DeepEqual(got, []TP{{"t", 2}, {"t", 13}}) {
		t.Fatalf("at 5%%: %v", got)
	}
}

func TestControllerElectLeadersAndAutoRebalance(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	f := newFakeSender()
	rc := startController(t, db, 1, f, Config{AutoLeaderRebalanceEnable: true, LeaderImbalanceCheckInterval: 20 * time.Millisecond, LeaderImbalancePerBrokerPercentage: 10})
	if _, err := RegisterBroker(ctx, rc.sess, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	others := registerBrokers(t, db, 2)
	eventually(t, "controller active", f, rc.c.IsActive)
	if r := CreateTopics(ctx, rc.sess, []TopicSpec{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {2, 1}}}}, false); r[0].ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	leaderOf := func() (int32, int32) {
		d, stat, err := rc.sess.Get(ctx, PartitionStatePath("t", 0))
		if err != nil {
			return -9, -9
		}
		ps, _ := decodePartitionState(d, stat)
		return ps.Leader, ps.LeaderEpoch
	}
	eventually(t, "partition started", f, func() bool { l, _ := leaderOf(); return l == 2 })

	// Preferred already leads: v1 says ELECTION_NOT_NEEDED, v0 says nothing.
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version = 1
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	resp, err := rc.c.ElectLeaders(ctx, req)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Fatalf("%+v %v", resp, err)
	}
	req.Version = 0
	if resp, _ = rc.c.ElectLeaders(ctx, req); resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("v0: %+v", resp)
	}

	// Broker 2 restarts: 1 leads meanwhile; once 2 is back in the ISR, the
	// automatic rebalance gives leadership back to it.
	others[2].Close()
	eventually(t, "failover to 1", f, func() bool { l, _ := leaderOf(); return l == 1 })
	before := len(f.snapshot())
	registerBrokers(t, db, 2)
	// The ISR may only grow once the controller has seen broker 2 return.
	f.waitFor(t, "controller sees broker 2 again", func(s []sentReq) bool {
		for _, r := range s[before:] {
			if um, ok := r.req.(*kmsg.UpdateMetadataRequest); ok && r.broker == 2 && len(um.LiveBrokers) == 2 {
				return true
			}
		}
		return false
	})
	_, epoch := leaderOf()
	st := rc.sess
	d, stat, _ := st.Get(ctx, PartitionStatePath("t", 0))
	ps, _ := decodePartitionState(d, stat)
	alter := alterReq(2, 1, -1, ps.LeaderEpoch, ps.ZkVersion, 1, 2)
	topic, _ := ReadTopic(ctx, st, "t")
	alter.Topics[0].TopicID = topic.TopicID
	if resp, err := rc.c.AlterPartition(ctx, alter); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("ISR expansion: %+v %v", resp, err)
	}
	eventually(t, "leadership back to the preferred replica", f, func() bool {
		l, e := leaderOf()
		return l == 2 && e == epoch+1
	})
}
