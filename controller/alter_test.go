package controller

import (
	"context"
	"maps"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func alterReq(version int16, broker int32, brokerEpoch int64, leaderEpoch, partitionEpoch int32, isr ...int32) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = version, broker, brokerEpoch
	t := kmsg.NewAlterPartitionRequestTopic()
	t.Topic, t.TopicID = "t", [16]byte{9}
	p := kmsg.NewAlterPartitionRequestTopicPartition()
	p.Partition, p.LeaderEpoch, p.PartitionEpoch = 0, leaderEpoch, partitionEpoch
	if version >= 3 {
		for _, id := range isr {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID = id
			p.NewEpochISR = append(p.NewEpochISR, e)
		}
	} else {
		p.NewISR = isr
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// withEpochs sets the broker epochs of req's new ISR members (v3+).
func withEpochs(req *kmsg.AlterPartitionRequest, epochs map[int32]int64) *kmsg.AlterPartitionRequest {
	for i, e := range req.Topics[0].Partitions[0].NewEpochISR {
		if epoch, ok := epochs[e.BrokerID]; ok {
			req.Topics[0].Partitions[0].NewEpochISR[i].BrokerEpoch = epoch
		}
	}
	return req
}

func TestOnAlterPartition(t *testing.T) {
	tests := []struct {
		name        string
		req         *kmsg.AlterPartitionRequest
		wantTop     int16
		wantCode    int16
		wantISR     []int32
		wantVersion int32
		wantWrite   bool
	}{
		{name: "expand isr", req: alterReq(3, 1, 101, 4, 7, 1, 2, 3), wantISR: []int32{1, 2, 3}, wantVersion: 8, wantWrite: true},
		{name: "expand isr v0 by name", req: alterReq(0, 1, 101, 4, 7, 1, 2, 3), wantISR: []int32{1, 2, 3}, wantVersion: 8, wantWrite: true},
		{name: "shrink isr", req: alterReq(2, 1, -1, 4, 7, 1), wantISR: []int32{1}, wantVersion: 8, wantWrite: true},
		{name: "stale broker epoch", req: alterReq(3, 1, 99, 4, 7, 1, 2), wantTop: kerr.StaleBrokerEpoch.Code},
		{name: "not the leader", req: alterReq(3, 2, 102, 4, 7, 1, 2), wantCode: kerr.NotLeaderForPartition.Code},
		{name: "old leader epoch", req: alterReq(3, 1, 101, 3, 7, 1, 2), wantCode: kerr.FencedLeaderEpoch.Code},
		{name: "old partition epoch", req: alterReq(3, 1, 101, 4, 6, 1), wantCode: kerr.InvalidUpdateVersion.Code},
		{name: "retry of applied change", req: alterReq(3, 1, 101, 4, 6, 1, 2), wantISR: []int32{1, 2}, wantVersion: 7},
		{name: "dead replica", req: alterReq(3, 1, 101, 4, 7, 1, 4), wantCode: kerr.IneligibleReplica.Code},
		{name: "dead replica v0", req: alterReq(0, 1, 101, 4, 7, 1, 4), wantCode: kerr.OperationNotAttempted.Code},
		// INELIGIBLE_REPLICA came with v2 (KIP-841); a v1 leader does not
		// know it, so it gets OPERATION_NOT_ATTEMPTED, as Kafka answers.
		{name: "dead replica v1", req: alterReq(1, 1, 101, 4, 7, 1, 4), wantCode: kerr.OperationNotAttempted.Code},
		{name: "dead replica v2", req: alterReq(2, 1, 101, 4, 7, 1, 4), wantCode: kerr.IneligibleReplica.Code},
		// KIP-903: a member named with a broker epoch other than its live
		// registration's was heard from in an earlier incarnation.
		{name: "member of an earlier registration", req: withEpochs(alterReq(3, 1, 101, 4, 7, 1, 2, 3), map[int32]int64{1: 101, 2: 102, 3: 90}), wantCode: kerr.IneligibleReplica.Code},
		{name: "members at their registrations", req: withEpochs(alterReq(3, 1, 101, 4, 7, 1, 2, 3), map[int32]int64{1: 101, 2: 102, 3: 103}), wantISR: []int32{1, 2, 3}, wantVersion: 8, wantWrite: true},
		// -1, which Kafka 3.9's ZooKeeper-mode leaders send for every
		// member, is not checked, nor is 0, which no registration has.
		{name: "member epochs not sent", req: withEpochs(alterReq(3, 1, 101, 4, 7, 1, 2, 3), map[int32]int64{1: -1, 2: -1, 3: 0}), wantISR: []int32{1, 2, 3}, wantVersion: 8, wantWrite: true},
		{name: "not a replica", req: alterReq(3, 1, 101, 4, 7, 1, 5), wantCode: kerr.IneligibleReplica.Code},
		{name: "leader left out", req: alterReq(3, 1, 101, 4, 7, 2), wantCode: kerr.InvalidRequest.Code},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := cluster([]int32{1, 2, 3, 5}, map[int32][]int32{0: {1, 2, 3, 4}}, map[int32]PartitionState{0: {Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2}, ControllerEpoch: 2, ZkVersion: 7}})
			resp, a := s.OnAlterPartition(tc.req)
			if resp.ErrorCode != tc.wantTop {
				t.Fatalf("top-level error %d, want %d", resp.ErrorCode, tc.wantTop)
			}
			if tc.wantTop != 0 {
				return
			}
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode != tc.wantCode {
				t.Fatalf("error %d, want %d", p.ErrorCode, tc.wantCode)
			}
			if (len(a.Writes) > 0) != tc.wantWrite {
				t.Fatalf("writes %+v", a.Writes)
			}
			if tc.wantCode != 0 {
				return
			}
			if !reflect.DeepEqual(p.ISR, tc.wantISR) || p.PartitionEpoch != tc.wantVersion || p.LeaderID != 1 || p.LeaderEpoch != 4 {
				t.Fatalf("response partition %+v", p)
			}
			if tc.wantWrite {
				if a.Writes[0].ExpectedVersion != 7 || a.Writes[0].State.LeaderEpoch != 4 || a.Writes[0].State.ControllerEpoch != 3 {
					t.Fatalf("write %+v", a.Writes[0])
				}
				if len(a.UpdateMetadata) != 4 {
					t.Fatalf("UpdateMetadata to %v", sortedKeys(a.UpdateMetadata))
				}
			}
		})
	}
}

func TestOnControlledShutdown(t *testing.T) {
	s := cluster([]int32{1, 2, 3}, map[int32][]int32{0: {1, 2}, 1: {2, 1}, 2: {1}, 3: {1, 3}}, map[int32]PartitionState{
		0: {Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}, ZkVersion: 1},
		1: {Leader: 2, LeaderEpoch: 1, ISR: []int32{2, 1}, ZkVersion: 1},
		2: {Leader: 1, LeaderEpoch: 0, ISR: []int32{1}},
		3: {Leader: 1, LeaderEpoch: 0, ISR: []int32{1}}, // 3 is out of sync: no one can take over
	})
	if code, _, _ := s.OnControlledShutdown(1, 50); code != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale epoch: %d", code)
	}
	if code, _, _ := s.OnControlledShutdown(9, -1); code != kerr.BrokerNotAvailable.Code {
		t.Fatalf("unknown broker: %d", code)
	}
	code, remaining, a := s.OnControlledShutdown(1, 101)
	if code != 0 {
		t.Fatal(code)
	}
	if !reflect.DeepEqual(remaining, []TP{{"t", 3}}) {
		t.Fatalf("remaining %v", remaining)
	}
	got := map[int32]PartitionState{}
	for _, w := range a.Writes {
		got[w.TP.Partition] = w.State
	}
	want := map[int32]PartitionState{
		0: {Leader: 2, LeaderEpoch: 2, ISR: []int32{2}, ControllerEpoch: 3},
		1: {Leader: 2, LeaderEpoch: 2, ISR: []int32{2}, ControllerEpoch: 3},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("writes %+v", got)
	}
	// The shutting-down broker still hears about its partitions.
	if _, ok := a.LeaderAndISR[1][TP{"t", 0}]; !ok {
		t.Fatal("no LeaderAndISR to the shutting-down broker")
	}
	// While shutting down it may not rejoin an ISR.
	if resp, _ := s.OnAlterPartition(alterReq(3, 2, 102, 2, 2, 2, 1)); resp.Topics[0].Partitions[0].ErrorCode != kerr.IneligibleReplica.Code {
		t.Fatalf("shutting-down broker admitted to ISR: %+v", resp.Topics[0].Partitions[0])
	}
}

func TestControllerAlterPartition(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	f := newFakeSender()
	rc := startController(t, db, 1, f, Config{})
	epoch1, err := RegisterBroker(ctx, rc.sess, plaintext(1))
	if err != nil {
		t.Fatal(err)
	}
	registerBrokers(t, db, 2)
	eventually(t, "controller active", f, rc.c.IsActive)
	res := CreateTopics(ctx, rc.sess, []TopicSpec{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2}}}}, false)
	if res[0].ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	f.waitFor(t, "LeaderAndISR", func(s []sentReq) bool { return hasLeaderAndISR(s, 1, "t", 1) })

	// The leader shrinks the ISR to itself (broker 2 lagging).
	req := alterReq(3, 1, epoch1, 0, 0, 1)
	req.Topics[0].TopicID = res[0].TopicID
	resp, err := rc.c.AlterPartition(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if resp.ErrorCode != 0 || p.ErrorCode != 0 || p.PartitionEpoch != 1 || !reflect.DeepEqual(p.ISR, []int32{1}) {
		t.Fatalf("response %+v", resp)
	}
	d, stat, _ := rc.sess.Get(ctx, PartitionStatePath("t", 0))
	if string(d) != `{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}` || stat.Version != 1 {
		t.Fatalf("state %s v%d", d, stat.Version)
	}
	f.waitFor(t, "UpdateMetadata with the new ISR", func(s []sentReq) bool {
		um, ok := lastOf[*kmsg.UpdateMetadataRequest](s, 2)
		return ok && len(um.TopicStates) == 1 && reflect.DeepEqual(um.TopicStates[0].PartitionStates[0].ISR, []int32{1})
	})

	// Controlled shutdown of broker 1 hands leadership... to no one: 2 is out of sync.
	cs := kmsg.NewPtrControlledShutdownRequest()
	cs.Version, cs.BrokerID, cs.BrokerEpoch = 3, 1, epoch1
	csResp, err := rc.c.ControlledShutdown(ctx, cs)
	if err != nil || csResp.ErrorCode != 0 || len(csResp.PartitionsRemaining) != 1 {
		t.Fatalf("controlled shutdown %+v %v", csResp, err)
	}

	// A broker that is not the controller answers NOT_CONTROLLER.
	other := New(Config{BrokerID: 2}, db.NewSession(), newFakeSender())
	resp, err = other.AlterPartition(ctx, req)
	if err != nil || resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("non-controller: %+v %v", resp, err)
	}
	csResp, err = other.ControlledShutdown(ctx, cs)
	if err != nil || csResp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("non-controller shutdown: %+v %v", csResp, err)
	}
}

// A decision's UpdateMetadata is built once for the brokers that get the
// same partitions; each request still carries its own broker's epoch, is
// its own (its sender may set its version), and a broker sent other
// partitions gets its own request.
func TestUpdateMetadataBuiltOncePerPartitionSet(t *testing.T) {
	s := cluster([]int32{1, 2, 3}, map[int32][]int32{0: {1, 2}, 1: {2, 3}}, map[int32]PartitionState{
		0: {Leader: 1, LeaderEpoch: 1, ISR: []int32{1, 2}},
		1: {Leader: 2, LeaderEpoch: 1, ISR: []int32{2, 3}},
	})
	one, both := map[TP]bool{{"t", 0}: true}, map[TP]bool{{"t", 0}: true, {"t", 1}: true}
	var um updateMetadataOnce
	r1 := um.build(s, 1, one)
	// A channel's goroutine sets the version of the request it sends
	// while the next broker's is built: the race detector (make test
	// runs -race) reports it if that request is the one copied.
	sent := make(chan struct{})
	go func() {
		r1.SetVersion(UpdateMetadataVersion)
		close(sent)
	}()
	r2 := um.build(s, 2, maps.Clone(one))
	<-sent
	r3 := um.build(s, 3, both)
	for i, tc := range []struct {
		req   *kmsg.UpdateMetadataRequest
		epoch int64
		parts int
	}{{r1, 101, 1}, {r2, 102, 1}, {r3, 103, 2}} {
		if tc.req.BrokerEpoch != tc.epoch || len(tc.req.TopicStates) != 1 || len(tc.req.TopicStates[0].PartitionStates) != tc.parts || len(tc.req.LiveBrokers) != 3 {
			t.Fatalf("request %d: broker epoch %d, topics %+v, want epoch %d and %d partitions", i+1, tc.req.BrokerEpoch, tc.req.TopicStates, tc.epoch, tc.parts)
		}
	}
}
