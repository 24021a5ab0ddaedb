package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetForLeaderEpochCurrentEpochBeforeWrites: a leader that has
// written nothing in its epoch answers that epoch with (epoch, log end
// offset), as Kafka does from the epoch start it records on election;
// before, Brook answered UNDEFINED (-1, -1).
func TestOffsetForLeaderEpochCurrentEpochBeforeWrites(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("silent", 1, nil)
	p := tb.b.replicas.Get("silent", 0)
	if p == nil {
		t.Fatal("partition not hosted")
	}
	epoch := p.State().LeaderEpoch
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.SetVersion(4)
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = "silent"
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, epoch, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := tb.roundTrip(req).(*kmsg.OffsetForLeaderEpochResponse)
	got := resp.Topics[0].Partitions[0]
	if got.ErrorCode != 0 || got.LeaderEpoch != epoch || got.EndOffset != 0 {
		t.Fatalf("OffsetForLeaderEpoch(%d) = error %d, epoch %d, end offset %d; want epoch %d, end offset 0",
			epoch, got.ErrorCode, got.LeaderEpoch, got.EndOffset, epoch)
	}
}
