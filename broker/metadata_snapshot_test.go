package broker

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
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

// TestControllerStatesFromCache: the cache hands its controller the states
// the last UpdateMetadata carried, with their znode versions, only for the
// topic id it holds, and copies the controller may keep.
func TestControllerStatesFromCache(t *testing.T) {
	m := newMetadataCache()
	req := kmsg.NewPtrUpdateMetadataRequest()
	ts := kmsg.NewUpdateMetadataRequestTopicState()
	ts.Topic, ts.TopicID = "t", [16]byte{7}
	for p := int32(0); p < 2; p++ {
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Topic, ps.Partition, ps.Leader, ps.LeaderEpoch = "t", p, 2+p, 5
		ps.ControllerEpoch, ps.ISR, ps.ZKVersion = 3, []int32{2 + p, 1}, 9+p
		ts.PartitionStates = append(ts.PartitionStates, ps)
	}
	req.TopicStates = append(req.TopicStates, ts)
	m.apply(req)
	if got := m.controllerStates("t", [16]byte{8}); got != nil {
		t.Fatalf("another topic id: %+v", got)
	}
	if got := m.controllerStates("u", [16]byte{7}); got != nil {
		t.Fatalf("another topic: %+v", got)
	}
	got := m.controllerStates("t", [16]byte{7})
	want := map[int32]controller.PartitionState{
		0: {Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 1}, ControllerEpoch: 3, ZkVersion: 9},
		1: {Leader: 3, LeaderEpoch: 5, ISR: []int32{3, 1}, ControllerEpoch: 3, ZkVersion: 10},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("states\n got %+v\nwant %+v", got, want)
	}
	got[0].ISR[0] = 99
	if again := m.controllerStates("t", [16]byte{7}); again[0].ISR[0] != 2 {
		t.Fatalf("the caller's copy shares the cache's ISR: %v", again[0].ISR)
	}
}
