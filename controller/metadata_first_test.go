package controller

import (
	"maps"
	"slices"
	"testing"
)

// TestMetadataFirstForNewBrokers: a Kafka broker looks the leader of a
// partition it is told to follow up in its metadata cache, and one that has
// just started (or registered again after a crash) has an empty cache: it
// logs "cannot become follower since the new leader N is unavailable" and
// never fetches, so it never rejoins the ISR. Kafka's controller therefore
// sends a starting broker UpdateMetadata before LeaderAndIsr
// (onBrokerStartup), and every broker at failover (onControllerFailover).
// A Brook controller sent LeaderAndIsr first, and a Kafka 3.9 broker
// restarted under it stayed out of every ISR.
func TestMetadataFirstForNewBrokers(t *testing.T) {
	s := cluster([]int32{1, 2}, map[int32][]int32{0: {1, 2, 3}}, map[int32]PartitionState{0: {Leader: 1, ISR: []int32{1, 2}, ControllerEpoch: 3}})
	live := maps.Clone(s.Live)
	live[3] = BrokerInfo{ID: 3, Epoch: 103}
	a := s.OnBrokersChange(live)
	if _, ok := a.LeaderAndISR[3][TP{"t", 0}]; !ok {
		t.Fatalf("the new broker gets no LeaderAndIsr: %v", a.LeaderAndISR)
	}
	if got := sortedKeys(a.MetadataFirst); !slices.Equal(got, []int32{3}) {
		t.Errorf("metadata first for %v, want the new broker 3 only", got)
	}

	s = cluster([]int32{1, 2, 3}, map[int32][]int32{0: {1, 2, 3}}, map[int32]PartitionState{0: {Leader: 1, ISR: []int32{1, 2, 3}, ControllerEpoch: 2}})
	a = s.OnElected()
	if got := sortedKeys(a.MetadataFirst); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Errorf("at failover metadata first for %v, want every live broker", got)
	}
}
