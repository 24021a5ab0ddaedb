package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPartitionReassignmentsSingleNode covers the handlers' answers on one
// broker (its own controller): Kafka's per-partition errors, a no-op
// reassignment that completes at once, and an empty listing.
func TestPartitionReassignmentsSingleNode(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("ra", 1, nil)
	adm := tb.admin()
	ctx := testContext(t)

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("ra", 0, []int32{0, 1}) // broker 1 is not alive
	req.Assign("ra", 5, []int32{0})    // no such partition
	req.Assign("nope", 0, []int32{0})  // no such topic
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int32]error{
		"ra":   {0: kerr.InvalidReplicaAssignment, 5: kerr.UnknownTopicOrPartition},
		"nope": {0: kerr.UnknownTopicOrPartition},
	}
	for topic, ps := range want {
		for p, werr := range ps {
			if got := res[topic][p].Err; got != werr {
				t.Errorf("%s-%d: %v (%s), want %v", topic, p, got, res[topic][p].ErrMessage, werr)
			}
		}
	}

	ok := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "ra"
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 0, []int32{0} // the current assignment: done at once
	rt.Partitions = append(rt.Partitions, rp)
	ok.Topics = append(ok.Topics, rt)
	if r := tb.roundTrip(ok).(*kmsg.AlterPartitionAssignmentsResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("no-op reassignment: %+v", r)
	}
	ok.SetVersion(1)
	ok.AllowReplicationFactorChange = false
	ok.Topics[0].Partitions[0].Replicas = []int32{0, 0}
	if r := tb.roundTrip(ok).(*kmsg.AlterPartitionAssignmentsResponse); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidReplicaAssignment.Code {
		t.Fatalf("duplicates: %+v", r.Topics[0].Partitions[0])
	}
	ok.Topics[0].Partitions[0].Replicas = nil
	if r := tb.roundTrip(ok).(*kmsg.AlterPartitionAssignmentsResponse); r.Topics[0].Partitions[0].ErrorCode != kerr.NoReassignmentInProgress.Code {
		t.Fatalf("cancel: %+v", r.Topics[0].Partitions[0])
	}

	listed, err := adm.ListPartitionReassignments(ctx, nil)
	if err != nil || len(listed) != 0 {
		t.Fatalf("list: %v %+v", err, listed)
	}
}
