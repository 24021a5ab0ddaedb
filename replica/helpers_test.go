package replica

import (
	"context"
	"github.com/brook-mq/brook/internal/testutil"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
)

// fakeCluster answers AlterPartition with answer (or accepts every change,
// bumping the partition epoch) and records the requests.
type fakeCluster struct {
	mu     sync.Mutex
	alters []*kmsg.AlterPartitionRequest
	answer func(*kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)
}

func (c *fakeCluster) Request(context.Context, int32, string, kmsg.Request) (kmsg.Response, error) {
	return nil, context.Canceled
}

func (c *fakeCluster) AlterPartition(_ context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	c.mu.Lock()
	c.alters = append(c.alters, req)
	answer := c.answer
	c.mu.Unlock()
	if answer != nil {
		return answer(req)
	}
	return acceptAll(req), nil
}

// requests counts the AlterPartition requests received.
func (c *fakeCluster) requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.alters)
}

func acceptAll(req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	for _, rt := range req.Topics {
		ot := kmsg.NewAlterPartitionResponseTopic()
		ot.Topic, ot.TopidID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			op := kmsg.NewAlterPartitionResponseTopicPartition()
			op.Partition, op.LeaderID, op.LeaderEpoch = rp.Partition, req.BrokerID, rp.LeaderEpoch
			op.ISR, op.PartitionEpoch = rp.NewISR, rp.PartitionEpoch+1
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}

func refuseAll(code int16) func(*kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	return func(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
		resp := acceptAll(req)
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
		return resp, nil
	}
}

const (
	testTopic = "t"
	lagMax    = 10 * time.Second
)

var testTopicID = [16]byte{1, 2, 3}

type fixture struct {
	t       *testing.T
	clock   *testutil.Clock
	cluster *fakeCluster
	m       *Manager
	p       *Partition
}

// newFixture hosts partition t-0 on broker 1 with the given state.
func newFixture(t *testing.T, s State) *fixture {
	t.Helper()
	return newFixtureAs(t, 1, &fakeCluster{}, s)
}

// newFixtureAs hosts t-0 on broker id, reaching the cluster through c.
func newFixtureAs(t *testing.T, id int32, c Cluster, s State) *fixture {
	t.Helper()
	return newFixtureWith(t, id, c, s, nil)
}

// newFixtureWith is newFixtureAs with the manager's config changed by set.
func newFixtureWith(t *testing.T, id int32, c Cluster, s State, set func(*Config)) *fixture {
	t.Helper()
	clock := testutil.NewClock(time.Unix(1_000_000, 0))
	logs, err := log.OpenManager(log.ManagerConfig{Dirs: []string{t.TempDir()}, BrokerID: 1, ClusterID: "test", Now: clock.Now},
		func(log.TopicPartition) log.Config { return log.DefaultConfig() })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	f := &fixture{t: t, clock: clock}
	f.cluster, _ = c.(*fakeCluster)
	cfg := Config{
		LocalID: id, Logs: logs, ConfigFor: func(string) log.Config { return log.DefaultConfig() },
		Cluster: c, ReplicaLagTimeMax: lagMax, Now: clock.Now,
	}
	if set != nil {
		set(&cfg)
	}
	f.m = NewManager(cfg)
	f.leaderAndISR(s)
	f.p = f.m.Get(testTopic, 0)
	return f
}

func (f *fixture) leaderAndISR(s State) *kmsg.LeaderAndISRResponse {
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.SetVersion(5)
	ts := kmsg.NewLeaderAndISRRequestTopicState()
	ts.Topic, ts.TopicID = testTopic, testTopicID
	ps := kmsg.NewLeaderAndISRRequestTopicPartition()
	ps.Topic, ps.Partition = testTopic, 0
	ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas, ps.ZKVersion = s.Leader, s.LeaderEpoch, s.ISR, s.Replicas, s.ZKVersion
	ts.PartitionStates = append(ts.PartitionStates, ps)
	req.TopicStates = append(req.TopicStates, ts)
	return f.m.ApplyLeaderAndISR(req)
}

// produce appends n one-record batches as leader and returns the LEO.
func (f *fixture) produce(n int) int64 {
	f.t.Helper()
	for range n {
		b, err := batch.Build(batch.BuildOptions{BaseTimestamp: f.clock.Now().UnixMilli()}, []batch.Record{{Value: []byte("v")}}, nil)
		if err != nil {
			f.t.Fatal(err)
		}
		if _, err := f.p.AppendAsLeader(b, 1, 0); err != nil {
			f.t.Fatal(err)
		}
	}
	return f.p.Log().LogEndOffset()
}

func (f *fixture) fetch(replica int32, offset int64) {
	f.t.Helper()
	f.fetchFrom(replica, offset, 0)
}

// fetchFrom is a follower's fetch at offset reporting its log start offset.
func (f *fixture) fetchFrom(replica int32, offset, logStartOffset int64) {
	f.t.Helper()
	if err := f.p.UpdateFollowerFetch(replica, -1, offset, logStartOffset); err != nil {
		f.t.Fatalf("follower %d fetch at %d: %v", replica, offset, err)
	}
}
