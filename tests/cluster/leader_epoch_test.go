package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestOffsetForLeaderEpochOfSilentNewLeader: after its leader is killed, a
// partition's new leader answers OffsetForLeaderEpoch for its own epoch
// with (epoch, log end offset) before writing anything in it, as Kafka
// does from the epoch start it records on election. A follower holding a
// later epoch than the leader's last written one needs that answer to find
// where it diverges; Brook answered UNDEFINED (-1, -1).
func TestOffsetForLeaderEpochOfSilentNewLeader(t *testing.T) {
	c := startCluster(t, 3, nil)
	const topic, partitions, n = "silent-leader", 3, 10
	c.createTopic(topic, partitions, nil)
	before := c.converge(c.ids, healthy(topic, partitions, c.ids))
	victim := leaderVictim(t, before, topic)
	p := before.ledBy(topic, victim)[0]

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := produceSeqs(ctx, producer(t, c.bootstrap()), topic, partitions, 0, n); err != nil {
		t.Fatalf("produce: %v", err)
	}
	c.kill9(victim)
	live := c.others(victim)
	after := c.converge(live, func(v clusterView) error { return checkFailedOver(v, before, topic, victim, live) })
	epoch := after.Partitions[p].LeaderEpoch

	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p.partition, epoch, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// The client sends it to the partition's leader.
	resp, err := req.RequestWith(ctx, testutil.Client(t, c.bootstrap()))
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Topics[0].Partitions[0]
	if got.ErrorCode != 0 || got.LeaderEpoch != epoch || got.EndOffset != n {
		t.Fatalf("new leader %d of %s-%d: OffsetForLeaderEpoch(%d) = error %d, epoch %d, end offset %d; want epoch %d, end offset %d",
			after.Partitions[p].Leader, topic, p.partition, epoch, got.ErrorCode, got.LeaderEpoch, got.EndOffset, epoch, n)
	}
}
