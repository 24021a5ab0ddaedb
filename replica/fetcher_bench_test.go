package replica

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/log"
)

// benchFollower makes broker 2 follow broker 1 for topics×perTopic
// partitions, each with an empty log, and returns the fetcher toward
// broker 1 with every partition past its truncation, as after a rejoin.
func benchFollower(b *testing.B, topics, perTopic int) *fetcher {
	b.Helper()
	clock := testutil.NewClock(time.Unix(1_000_000, 0))
	logs, err := log.OpenManager(log.ManagerConfig{Dirs: []string{b.TempDir()}, BrokerID: 2, ClusterID: "bench", Now: clock.Now},
		func(log.TopicPartition) log.Config { return log.DefaultConfig() })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { logs.Close() })
	m := NewManager(Config{
		LocalID: 2, Logs: logs, ConfigFor: func(string) log.Config { return log.DefaultConfig() },
		Cluster: &fakeCluster{}, ReplicaLagTimeMax: lagMax, Now: clock.Now,
	})
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.SetVersion(5)
	for t := range topics {
		ts := kmsg.NewLeaderAndISRRequestTopicState()
		ts.Topic, ts.TopicID = fmt.Sprintf("bench-%d", t), [16]byte{byte(t + 1), 7}
		for p := range int32(perTopic) {
			ps := kmsg.NewLeaderAndISRRequestTopicPartition()
			ps.Topic, ps.Partition = ts.Topic, p
			ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas = 1, 1, []int32{1, 2}, []int32{1, 2}
			ts.PartitionStates = append(ts.PartitionStates, ps)
		}
		req.TopicStates = append(req.TopicStates, ts)
	}
	for _, rt := range m.ApplyLeaderAndISR(req).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				b.Fatalf("LeaderAndISR %x-%d: error %d", rt.TopicID, rp.Partition, rp.ErrorCode)
			}
		}
	}
	f := m.fetchers[1]
	if f == nil || len(f.parts) != topics*perTopic {
		b.Fatalf("fetcher toward 1: %v", f)
	}
	for _, fp := range f.parts {
		fp.Truncate = false
	}
	return f
}

// BenchmarkFetchRequestIdle is a follower fetcher's work to build one
// Fetch toward a leader of 16,000 partitions in an established
// incremental session (fetcher.buildFetch, the answer taken by
// FetchAnswered and an empty answer applied): "idle" when nothing
// changed, so the request lists no partition; "10-changed" when 10
// partitions' leader epochs moved since the last fetch, so it lists 10;
// "10-churned" when 10 partitions left (forgotten) and 10 came back
// (listed) since the last fetch.
//
//	go test -run XXX -bench FetchRequestIdle -benchmem ./replica
func BenchmarkFetchRequestIdle(b *testing.B) {
	const topics, perTopic = 16, 1000
	f := benchFollower(b, topics, perTopic)
	parts := make([]*fetchPart, 0, len(f.parts))
	for _, fp := range f.parts {
		parts = append(parts, fp)
	}
	answer := func(b *testing.B, req *kmsg.FetchRequest, sent FetchSent) {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.SessionID = 7
		if err := f.steps.FetchAnswered(resp, nil); err != nil {
			b.Fatal(err)
		}
		f.process(resp, sent)
	}
	listed := func(req *kmsg.FetchRequest) (n int) {
		for _, t := range req.Topics {
			n += len(t.Partitions)
		}
		return n
	}
	forgotten := func(req *kmsg.FetchRequest) (n int) {
		for _, t := range req.ForgottenTopics {
			n += len(t.Partitions)
		}
		return n
	}
	// Open the session: a full fetch of every partition.
	req, sent, _ := f.buildFetch()
	if req == nil || req.SessionEpoch != 0 || listed(req) != topics*perTopic {
		b.Fatalf("full fetch: %v", req)
	}
	answer(b, req, sent)
	// fetches counts the fetches of every run: the benchmark runs each
	// case several times, and change must go on from where it stopped.
	fetches := 0
	run := func(b *testing.B, change func(i int), wantListed, wantForgotten int) {
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			i := fetches
			fetches++
			change(i)
			req, sent, _ := f.buildFetch()
			if req == nil || req.SessionID != 7 || listed(req) != wantListed || forgotten(req) != wantForgotten {
				b.Fatalf("incremental fetch %d: %v", i, req)
			}
			answer(b, req, sent)
		}
	}
	b.Run("idle", func(b *testing.B) {
		run(b, func(int) {}, 0, 0)
	})
	b.Run("10-changed", func(b *testing.B) {
		run(b, func(i int) {
			for j := range 10 {
				parts[(i*10+j)%len(parts)].LeaderEpoch++
			}
		}, 10, 0)
	})
	b.Run("10-churned", func(b *testing.B) {
		far := f.m.cfg.Now().Add(time.Hour)
		block := func(k, j int) *fetchPart { return parts[(k*10+j)%len(parts)] }
		// Fetch i brings back block i of ten partitions, backed off the
		// fetch before, and backs off block i+1.
		churn := func(i int) {
			for j := range 10 {
				block(i, j).DelayUntil = time.Time{}
				block(i+1, j).DelayUntil = far
			}
		}
		for j := range 10 {
			block(fetches, j).DelayUntil = far
		}
		req, sent, _ := f.buildFetch()
		answer(b, req, sent)
		run(b, churn, 10, 10)
	})
}
