package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestControllerReassignmentZnodes drives reassignments through the
// controller's event loop and checks what lands in the store: the topic
// znode with adding_replicas/removing_replicas as Kafka 2.4+ writes it,
// /admin/reassign_partitions read on creation and deleted once done, and
// the StopReplica that removes a replica.
func TestControllerReassignmentZnodes(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	f := newFakeSender()
	rc := startController(t, db, 1, f, Config{})
	if _, err := RegisterBroker(ctx, rc.sess, plaintext(1)); err != nil {
		t.Fatal(err)
	}
	registerBrokers(t, db, 2, 3)
	eventually(t, "controller active", f, rc.c.IsActive)
	if res := CreateTopics(ctx, rc.sess, []TopicSpec{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2}}}}, false); res[0].ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	topicJSON := func() string {
		data, _, err := rc.sess.Get(ctx, TopicPath("t"))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	state := func() PartitionState {
		data, stat, err := rc.sess.Get(ctx, PartitionStatePath("t", 0))
		if err != nil {
			t.Fatal(err)
		}
		ps, err := decodePartitionState(data, stat)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	eventually(t, "partition started", f, func() bool { ok, _, _ := rc.sess.Exists(ctx, PartitionStatePath("t", 0)); return ok })
	// The leader reports the ISR growing to hold every target replica.
	catchUp := func(isr ...int32) {
		t.Helper()
		st := state()
		resp, err := rc.c.AlterPartition(ctx, alterReq(1, st.Leader, -1, st.LeaderEpoch, st.ZkVersion, isr...))
		if err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("AlterPartition: %v %+v", err, resp)
		}
	}

	// Through the API: 1,2 -> 2,3.
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 0, []int32{2, 3}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := rc.c.AlterPartitionReassignments(ctx, req)
	if err != nil || resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterPartitionReassignments: %v %+v", err, resp)
	}
	if got := topicJSON(); !strings.Contains(got, `"partitions":{"0":[2,3,1]},"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]}`) {
		t.Fatalf("topic znode during reassignment: %s", got)
	}
	list, err := rc.c.ListPartitionReassignments(ctx, kmsg.NewPtrListPartitionReassignmentsRequest())
	if err != nil || len(list.Topics) != 1 || len(list.Topics[0].Partitions) != 1 {
		t.Fatalf("list: %v %+v", err, list)
	}
	if p := list.Topics[0].Partitions[0]; len(p.Replicas) != 3 || p.AddingReplicas[0] != 3 || p.RemovingReplicas[0] != 1 {
		t.Fatalf("listed %+v", p)
	}
	f.waitFor(t, "LeaderAndISR starting broker 3 as a new replica", func(s []sentReq) bool {
		r, ok := lastOf[*kmsg.LeaderAndISRRequest](s, 3)
		return ok && r.TopicStates[0].PartitionStates[0].IsNew && len(r.TopicStates[0].PartitionStates[0].AddingReplicas) == 1
	})
	catchUp(1, 2, 3)
	if got := topicJSON(); !strings.Contains(got, `"partitions":{"0":[2,3]},"adding_replicas":{},"removing_replicas":{}`) {
		t.Fatalf("topic znode after reassignment: %s", got)
	}
	if st := state(); st.Leader != 2 || len(st.ISR) != 2 {
		t.Fatalf("state after reassignment %+v", st)
	}
	sent := f.waitFor(t, "StopReplica to broker 1", func(s []sentReq) bool { _, ok := lastOf[*kmsg.StopReplicaRequest](s, 1); return ok })
	if sr, _ := lastOf[*kmsg.StopReplicaRequest](sent, 1); !sr.Topics[0].PartitionStates[0].Delete || sr.Topics[0].PartitionStates[0].LeaderEpoch != state().LeaderEpoch {
		t.Fatalf("StopReplica %+v", sr.Topics[0].PartitionStates[0])
	}
	cancel := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt.Partitions[0].Replicas = nil
	cancel.Topics = append(cancel.Topics, rt)
	if resp, _ := rc.c.AlterPartitionReassignments(ctx, cancel); resp.Topics[0].Partitions[0].ErrorCode != kerr.NoReassignmentInProgress.Code {
		t.Fatalf("cancel with nothing in progress: %+v", resp.Topics[0].Partitions[0])
	}

	// Through ZooKeeper: 2,3 -> 3,1, then the znode goes once it is done.
	zk := `{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[3,1]}]}`
	if _, err := rc.sess.Create(ctx, ReassignPartitionsPath, []byte(zk), 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "zookeeper reassignment started", f, func() bool {
		return strings.Contains(topicJSON(), `"adding_replicas":{"0":[1]},"removing_replicas":{"0":[2]}`)
	})
	catchUp(2, 3, 1)
	eventually(t, "reassignment znode deleted", f, func() bool {
		ok, _, _ := rc.sess.Exists(ctx, ReassignPartitionsPath)
		return !ok
	})
	if got := topicJSON(); !strings.Contains(got, `"partitions":{"0":[3,1]}`) {
		t.Fatalf("topic znode after zookeeper reassignment: %s", got)
	}
	// A znode created again is read again.
	if _, err := rc.sess.Create(ctx, ReassignPartitionsPath, []byte(strings.ReplaceAll(zk, "[3,1]", "[1,3]")), 0); err != nil {
		t.Fatal(err)
	}
	eventually(t, "second zookeeper reassignment done", f, func() bool {
		ok, _, _ := rc.sess.Exists(ctx, ReassignPartitionsPath)
		return !ok && strings.Contains(topicJSON(), `"partitions":{"0":[1,3]}`)
	})
}
