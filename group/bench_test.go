package group

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func benchCoordinator(b *testing.B) (*Coordinator, *memPartition) {
	p := &memPartition{}
	c := New(Config{NumPartitions: 1})
	b.Cleanup(c.Close)
	c.OnElected(0, 0, p)
	deadline := time.Now().Add(10 * time.Second)
	for c.Heartbeat(context.Background(), &kmsg.HeartbeatRequest{Version: 4, Group: "x"}).ErrorCode != 25 {
		if time.Now().After(deadline) {
			b.Fatal("not loaded")
		}
		time.Sleep(time.Millisecond)
	}
	return c, p
}

// BenchmarkOffsetCommit measures durable commits (one partition each) from
// parallel simple consumers; the writer batches concurrent commits into
// one append.
func BenchmarkOffsetCommit(b *testing.B) {
	c, p := benchCoordinator(b)
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16) // many clients, as on a broker
	b.RunParallel(func(pb *testing.PB) {
		g := fmt.Sprintf("g%d", n.Add(1))
		meta := "m"
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group = 8, g
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, LeaderEpoch: -1, Metadata: &meta}}}}
		for i := int64(0); pb.Next(); i++ {
			req.Topics[0].Partitions[0].Offset = i
			if code := c.OffsetCommit(context.Background(), req).Topics[0].Partitions[0].ErrorCode; code != 0 {
				b.Errorf("commit: %d", code)
				return
			}
		}
	})
	b.StopTimer()
	p.mu.Lock()
	b.ReportMetric(float64(p.next)/float64(len(p.batches)), "records/batch")
	p.mu.Unlock()
}

// BenchmarkOffsetFetch measures fetching one committed partition.
func BenchmarkOffsetFetch(b *testing.B) {
	c, _ := benchCoordinator(b)
	meta := ""
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group = 8, "g"
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1, Metadata: &meta}}}}
	c.OffsetCommit(context.Background(), commit)
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if c.OffsetFetch(context.Background(), req).Groups[0].Topics[0].Partitions[0].Offset != 1 {
			b.Fatal("wrong offset")
		}
	}
}

// BenchmarkRebalance measures a full join+sync of a fresh 10-member group
// on the pure state machine (no I/O; writes completed inline).
func BenchmarkRebalance(b *testing.B) {
	t := &testing.T{}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h := newHarness(t, testLimits())
		var chans []chan joinResult
		for j := 0; j < 10; j++ {
			chans = append(chans, h.join(withMember("")))
		}
		// The first join completed alone; the other nine joined a
		// rebalance that waits for the first member to rejoin.
		first := <-chans[0]
		chans[0] = h.join(withMember(first.memberID))
		var leader joinResult
		for _, ch := range chans {
			if r := <-ch; len(r.members) > 0 {
				leader = r
			}
		}
		h.sync(leader.memberID, leader.generation, nil)
		h.completeWrites(nil)
		if h.group().state != StateStable {
			b.Fatalf("state %v", h.group().state)
		}
	}
}
