package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkMetadataAllTopics answers the topics of an all-topics Metadata
// request from a cache of 50 topics of 1,000 partitions (a 3-broker
// cluster at 50,000 partitions), as an admin client or a consumer with a
// regex subscription asks every few seconds, and the scale benchmark
// every 100 ms.
func BenchmarkMetadataAllTopics(b *testing.B) {
	br := &Broker{meta: newMetadataCache()}
	br.meta.apply(bigUpdateMetadata(50, 1000))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		n := 0
		isLive := br.meta.liveSet()
		for _, name := range br.meta.topicNamesSorted() {
			t, _ := br.meta.topic(name)
			n += len(br.metadataTopic(t, 12, isLive).Partitions)
		}
		if n != 50*1000 {
			b.Fatalf("%d partitions answered, want %d", n, 50*1000)
		}
	}
}

func bigUpdateMetadata(topics, partitions int) *kmsg.UpdateMetadataRequest {
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.ControllerID = 1
	for id := int32(1); id <= 3; id++ {
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = id
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	for t := range topics {
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic = fmt.Sprintf("scale-%03d", t)
		ts.TopicID = [16]byte{byte(t + 1)}
		for p := range partitions {
			ps := kmsg.NewUpdateMetadataRequestTopicPartition()
			ps.Topic, ps.Partition = ts.Topic, int32(p)
			ps.Leader = int32(p%3 + 1)
			ps.Replicas = []int32{1, 2, 3}
			ps.ISR = []int32{1, 2, 3}
			ts.PartitionStates = append(ts.PartitionStates, ps)
		}
		req.TopicStates = append(req.TopicStates, ts)
	}
	return req
}

// TestMetadataSnapshotFollowsUpdates: a topic's sorted partitions are
// shared between snapshots until an update changes the topic, and an
// earlier snapshot keeps what it saw.
func TestMetadataSnapshotFollowsUpdates(t *testing.T) {
	m := newMetadataCache()
	m.apply(bigUpdateMetadata(2, 4))
	before, _ := m.topic("scale-000")
	again, _ := m.topic("scale-000")
	if &before.partitions[0] != &again.partitions[0] {
		t.Fatal("two snapshots of an unchanged topic copied its partitions")
	}
	update := func(ps kmsg.UpdateMetadataRequestTopicPartition) {
		up := kmsg.NewPtrUpdateMetadataRequest()
		up.ControllerID = 1
		up.LiveBrokers = bigUpdateMetadata(0, 0).LiveBrokers
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic, ts.TopicID = "scale-000", [16]byte{1}
		ts.PartitionStates = append(ts.PartitionStates, ps)
		up.TopicStates = append(up.TopicStates, ts)
		m.apply(up)
	}
	moved := kmsg.NewUpdateMetadataRequestTopicPartition()
	moved.Topic, moved.Partition, moved.Leader, moved.LeaderEpoch = "scale-000", 2, 3, 7
	update(moved)
	after, _ := m.topic("scale-000")
	if len(after.partitions) != 4 || after.partitions[2].Leader != 3 || after.partitions[2].LeaderEpoch != 7 {
		t.Fatalf("after a leader change: %+v", after.partitions)
	}
	if before.partitions[2].LeaderEpoch != 0 {
		t.Fatalf("the earlier snapshot changed: %+v", before.partitions[2])
	}
	gone := kmsg.NewUpdateMetadataRequestTopicPartition()
	gone.Topic, gone.Partition, gone.Leader = "scale-000", 3, leaderDuringDelete
	update(gone)
	if after, _ := m.topic("scale-000"); len(after.partitions) != 3 {
		t.Fatalf("after a partition's removal: %+v", after.partitions)
	}
	other, _ := m.topic("scale-001")
	if len(other.partitions) != 4 {
		t.Fatalf("another topic: %+v", other.partitions)
	}
}
