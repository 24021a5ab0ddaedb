package replica

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAnswerEpochs: the leader's answer to each partition of an
// OffsetForLeaderEpoch. The leader wrote epoch 1 at 0-2 and leads epoch 3
// from 3 (LEO 5): epoch 1 (and 2, which it never had) ends at 3, its
// current epoch at the LEO, a later epoch is UNDEFINED; a stale or future
// current_leader_epoch is fenced or unknown, and the lookup's error code
// (another leader, a failed authorization) answers its partition with
// -1, -1 however the partition's epochs stand.
func TestAnswerEpochs(t *testing.T) {
	f := newFixture(t, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	f.produce(3)
	f.leaderAndISR(State{Leader: 1, LeaderEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 1})
	if leo := f.produce(2); leo != 5 {
		t.Fatalf("LEO %d, want 5", leo)
	}
	type ask struct{ current, epoch int32 }
	type answer struct {
		code  int16
		epoch int32
		end   int64
	}
	asks := []ask{{-1, 1}, {3, 2}, {3, 3}, {3, 4}, {2, 3}, {4, 3}}
	want := []answer{
		{0, 1, 3}, {0, 1, 3}, {0, 3, 5}, {0, -1, -1},
		{kerr.FencedLeaderEpoch.Code, -1, -1}, {kerr.UnknownLeaderEpoch.Code, -1, -1},
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(3)
	for _, topic := range []string{testTopic, "denied"} {
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		for _, a := range asks {
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch, rp.LeaderEpoch = a.current, a.epoch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := AnswerEpochs(req, func(topic string, partition int32) (*Partition, int16) {
		if topic != testTopic {
			return f.p, kerr.TopicAuthorizationFailed.Code
		}
		return f.p, 0
	})
	if len(resp.Topics) != 2 {
		t.Fatalf("%d topics answered, want 2", len(resp.Topics))
	}
	for i, st := range resp.Topics {
		if st.Topic != req.Topics[i].Topic || len(st.Partitions) != len(asks) {
			t.Fatalf("topic %d answered as %q with %d partitions, want %q with %d", i, st.Topic, len(st.Partitions), req.Topics[i].Topic, len(asks))
		}
		for j, sp := range st.Partitions {
			w := want[j]
			if st.Topic != testTopic {
				w = answer{kerr.TopicAuthorizationFailed.Code, -1, -1}
			}
			if got := (answer{sp.ErrorCode, sp.LeaderEpoch, sp.EndOffset}); got != w {
				t.Errorf("%s current epoch %d, epoch %d: answered %+v, want %+v", st.Topic, asks[j].current, asks[j].epoch, got, w)
			}
		}
	}
}

// TestAnswerEpochsOfFollower: a partition this broker follows is answered
// NOT_LEADER_OR_FOLLOWER at its current epoch, but FENCED_LEADER_EPOCH or
// UNKNOWN_LEADER_EPOCH when the current_leader_epoch is not its epoch, as
// Kafka's getLocalLog checks the epoch before the leadership.
func TestAnswerEpochsOfFollower(t *testing.T) {
	f := newFixture(t, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	f.produce(2)
	f.leaderAndISR(State{Leader: 2, LeaderEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, ZKVersion: 1})
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(3)
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = testTopic
	for _, current := range []int32{-1, 4, 3, 5} {
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.CurrentLeaderEpoch, rp.LeaderEpoch = current, 1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := AnswerEpochs(req, func(string, int32) (*Partition, int16) { return f.p, 0 })
	want := []int16{kerr.NotLeaderForPartition.Code, kerr.NotLeaderForPartition.Code, kerr.FencedLeaderEpoch.Code, kerr.UnknownLeaderEpoch.Code}
	for i, sp := range resp.Topics[0].Partitions {
		if sp.ErrorCode != want[i] || sp.EndOffset != -1 {
			t.Errorf("current epoch %d: code %d end %d, want code %d end -1", req.Topics[0].Partitions[i].CurrentLeaderEpoch, sp.ErrorCode, sp.EndOffset, want[i])
		}
	}
}
