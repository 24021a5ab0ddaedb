package broker

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/internal/testutil"
)

// batchSources counts, per broker, the record batches a franz-go client
// read from that broker's fetch responses: which replica served it.
type batchSources struct {
	mu     sync.Mutex
	byNode map[int32]int
}

func (s *batchSources) OnFetchBatchRead(meta kgo.BrokerMetadata, _ string, _ int32, _ kgo.FetchBatchMetrics) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byNode[meta.NodeID]++
}

func (s *batchSources) counts() map[int32]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int32]int{}
	for k, v := range s.byNode {
		out[k] = v
	}
	return out
}

// rackFetch is a consumer Fetch of topic-0 at offset with client.rack.
func rackFetch(version int16, topic, rack string, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaID, req.MaxBytes, req.Rack = -1, 1<<20, rack
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestFollowerFetchRackAware: with broker.rack and Kafka's
// RackAwareReplicaSelector, the leader sends a consumer in a follower's
// rack to that follower (KIP-392), the follower serves it up to its high
// watermark, and a franz-go consumer with client.rack reads every batch
// from the follower.
func TestFollowerFetchRackAware(t *testing.T) {
	c := startReplClusterConfigs(t, func(id int32) map[string]string {
		return map[string]string{
			"broker.rack":            "rack-" + strconv.Itoa(int(id)),
			"replica.selector.class": config.RackAwareReplicaSelector,
		}
	}, nil)
	ctx := testContext(t)
	adm := kadm.NewClient(c.client())
	const topic = "follower-fetch"
	leader := c.createReplicated(ctx, adm, topic, nil)
	follower := leader%3 + 1
	followerRack := "rack-" + strconv.Itoa(int(follower))
	produceAcked(ctx, t, c.client(kgo.RequiredAcks(kgo.AllISRAcks())), topic, "v", 50)
	fp := c.brokers[follower].b.replicas.Get(topic, 0)
	testutil.Eventually(t, 30*time.Second, func() error {
		if hw := fp.HighWatermark(); hw != 50 {
			return fmt.Errorf("follower %d HW %d", follower, hw)
		}
		return nil
	})

	// The leader names the follower and returns no records.
	resp := c.brokers[leader].roundTrip(rackFetch(11, topic, followerRack, 0)).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.PreferredReadReplica != follower || len(p.RecordBatches) != 0 || p.HighWatermark != 50 {
		t.Fatalf("leader answer: error %d preferred %d, %d bytes, HW %d; want follower %d, no records, HW 50", p.ErrorCode, p.PreferredReadReplica, len(p.RecordBatches), p.HighWatermark, follower)
	}
	// A consumer in the leader's rack, or without a rack, reads there.
	for _, rack := range []string{"rack-" + strconv.Itoa(int(leader)), ""} {
		resp = c.brokers[leader].roundTrip(rackFetch(11, topic, rack, 0)).(*kmsg.FetchResponse)
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.PreferredReadReplica != -1 || len(p.RecordBatches) == 0 {
			t.Fatalf("rack %q at the leader: error %d preferred %d, %d bytes", rack, p.ErrorCode, p.PreferredReadReplica, len(p.RecordBatches))
		}
	}
	// The follower serves v11+ consumers, not older ones.
	resp = c.brokers[follower].roundTrip(rackFetch(11, topic, followerRack, 0)).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 50 || p.PreferredReadReplica != -1 {
		t.Fatalf("follower answer: error %d, %d bytes, HW %d, preferred %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark, p.PreferredReadReplica)
	}
	resp = c.brokers[follower].roundTrip(rackFetch(10, topic, "", 0)).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("v10 fetch from the follower: error %d, want NOT_LEADER_OR_FOLLOWER", p.ErrorCode)
	}
	resp = c.brokers[follower].roundTrip(rackFetch(11, topic, followerRack, 51)).(*kmsg.FetchResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch past the follower's end: error %d, want OFFSET_OUT_OF_RANGE", p.ErrorCode)
	}

	// franz-go with client.rack reads from the follower, including records
	// produced while it polls there (the follower's HW wakes its long poll).
	src := &batchSources{byNode: map[int32]int{}}
	cl := c.client(kgo.Rack(followerRack), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(src))
	got := 0
	for got < 50 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		got += fs.NumRecords()
	}
	produceAcked(ctx, t, c.client(kgo.RequiredAcks(kgo.AllISRAcks())), topic, "w", 10)
	for got < 60 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		got += fs.NumRecords()
	}
	counts := src.counts()
	if counts[follower] == 0 || counts[leader] != 0 {
		t.Fatalf("batches read per broker %v: want all from follower %d, none from leader %d", counts, follower, leader)
	}
	t.Logf("batches read per broker: %v (leader %d, follower %d)", counts, leader, follower)
}
