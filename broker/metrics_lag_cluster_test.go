package broker

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestConsumerLagForPartitionsLedElsewhere checks that the coordinator of a
// group serves kafka_consumergroup_lag exactly for every partition the group
// committed, also those led by the other two brokers (of which it holds no
// replica: each partition has one, on its own broker).
func TestConsumerLagForPartitionsLedElsewhere(t *testing.T) {
	c := startReplClusterConfigs(t, func(int32) map[string]string {
		return map[string]string{"brook.metrics.listener": "127.0.0.1:0"}
	}, nil)
	ctx := testContext(t)
	cl := c.client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	testutil.Eventually(t, 30*time.Second, func() error {
		bs, err := adm.ListBrokers(ctx)
		if err != nil || len(bs) != 3 {
			return fmt.Errorf("brokers %v: %v", bs, err)
		}
		return nil
	})

	create := kmsg.NewPtrCreateTopicsRequest()
	create.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "lag", -1, -1
	for p := range int32(3) {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, []int32{p + 1}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	create.Topics = append(create.Topics, rt)
	resp, err := create.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("create topic: %v", err)
	}

	produced := []int64{10, 20, 30}
	committed := []int64{4, 5, 6}
	var recs []*kgo.Record
	for p, n := range produced {
		for range n {
			recs = append(recs, &kgo.Record{Topic: "lag", Partition: int32(p), Value: []byte("v")})
		}
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		return cl.ProduceSync(ctx, recs...).FirstErr()
	})
	var offs kadm.Offsets
	for p, at := range committed {
		offs.Add(kadm.Offset{Topic: "lag", Partition: int32(p), At: at, LeaderEpoch: -1})
	}
	if resp, err := adm.CommitOffsets(ctx, "g", offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	coord := adm.FindGroupCoordinators(ctx, "g")
	if err := coord.Error(); err != nil {
		t.Fatalf("find coordinator: %v", err)
	}
	tb := c.brokers[coord["g"].NodeID]
	if tb == nil {
		t.Fatalf("coordinator %d is not one of the brokers", coord["g"].NodeID)
	}
	addr := tb.b.MetricsAddr().String()

	// The coordinator's metadata may not know every leader yet right after
	// the topic was created; once it does, each scrape is exact.
	testutil.Eventually(t, 30*time.Second, func() error {
		s, err := testutil.ScrapeMetrics(addr)
		if err != nil {
			return err
		}
		for p := range produced {
			part := strconv.Itoa(p)
			want := float64(produced[p] - committed[p])
			got, ok := s.Value("kafka_consumergroup_lag", "consumergroup", "g", "topic", "lag", "partition", part)
			if !ok {
				return fmt.Errorf("broker %d: no lag of lag-%d (leader %d)", tb.b.cfg.BrokerID, p, p+1)
			}
			if got != want {
				t.Fatalf("broker %d: lag of lag-%d (leader %d) = %v, want %v", tb.b.cfg.BrokerID, p, p+1, got, want)
			}
		}
		return nil
	})
}
