package replica

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stopReplica sends a v3 StopReplica for t-0 at epoch and returns the
// partition's error code.
func (f *fixture) stopReplica(epoch int32, del bool) int16 {
	f.t.Helper()
	req := kmsg.NewPtrStopReplicaRequest()
	req.SetVersion(3)
	rt := kmsg.NewStopReplicaRequestTopic()
	rt.Topic = testTopic
	ps := kmsg.NewStopReplicaRequestTopicPartitionState()
	ps.Partition, ps.LeaderEpoch, ps.Delete = 0, epoch, del
	rt.PartitionStates = append(rt.PartitionStates, ps)
	req.Topics = append(req.Topics, rt)
	resp := f.m.ApplyStopReplica(req)
	if len(resp.Partitions) != 1 {
		f.t.Fatalf("StopReplica answered %d partitions, want 1", len(resp.Partitions))
	}
	return resp.Partitions[0].ErrorCode
}

// A StopReplica decided at an older leader epoch than the replica has
// applied is fenced and changes nothing, as in Kafka's
// ReplicaManager.stopReplicas; the current epoch, a newer one and the
// deletion sentinel stop the replica.
func TestStopReplicaLeaderEpochFence(t *testing.T) {
	follower := State{Leader: 2, LeaderEpoch: 5, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, ZKVersion: 3}
	for _, tc := range []struct {
		name    string
		epoch   int32
		want    int16
		stopped bool
	}{
		{"older", 4, kerr.FencedLeaderEpoch.Code, false},
		{"current", 5, 0, true},
		{"newer", 6, 0, true},
		{"during delete", StopReplicaEpochDuringDelete, 0, true},
		{"no epoch", StopReplicaNoEpoch, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, follower)
			if got := f.stopReplica(tc.epoch, true); got != tc.want {
				t.Fatalf("StopReplica at epoch %d: error %d, want %d", tc.epoch, got, tc.want)
			}
			if stopped := f.m.Get(testTopic, 0) == nil; stopped != tc.stopped {
				t.Fatalf("StopReplica at epoch %d: stopped %v, want %v", tc.epoch, stopped, tc.stopped)
			}
			if !tc.stopped && f.p.State().Leader != 2 {
				t.Fatalf("fenced StopReplica changed the state to %+v", f.p.State())
			}
		})
	}
}

// Before v3 a StopReplica names partitions without epochs, with one delete
// flag for the request: Kafka reads them as NoEpoch, which skips the check.
func TestStopReplicaBeforeV3(t *testing.T) {
	for _, version := range []int16{0, 1, 2} {
		f := newFixture(t, State{Leader: 2, LeaderEpoch: 5, ISR: []int32{1, 2}, Replicas: []int32{1, 2}, ZKVersion: 3})
		req := kmsg.NewPtrStopReplicaRequest()
		req.SetVersion(version)
		req.DeletePartitions = true
		rt := kmsg.NewStopReplicaRequestTopic()
		rt.Topic = testTopic
		if version == 0 {
			rt.Partition = 0
		} else {
			rt.Partitions = []int32{0}
		}
		req.Topics = append(req.Topics, rt)
		resp := f.m.ApplyStopReplica(req)
		if len(resp.Partitions) != 1 || resp.Partitions[0].ErrorCode != 0 {
			t.Fatalf("v%d StopReplica answered %+v, want partition 0 without error", version, resp.Partitions)
		}
		if f.m.Get(testTopic, 0) != nil || f.m.logs.Get(f.p.tp) != nil {
			t.Fatalf("v%d StopReplica with delete left the partition or its log", version)
		}
	}
}
