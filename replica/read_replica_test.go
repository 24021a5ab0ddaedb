package replica

import (
	"testing"
	"time"
)

// The cases follow Kafka's RackAwareReplicaSelectorTest and the rules of
// ReplicaManager.findPreferredReadReplica.
func TestSelectRackAware(t *testing.T) {
	racks := map[int32]string{0: "rack-a", 1: "rack-a", 2: "rack-b", 3: "rack-c", 4: "rack-b"}
	rackOf := func(id int32) (string, bool) { r, ok := racks[id]; return r, ok }
	leader := ReadReplica{ID: 0, LogEndOffset: 10}
	tests := []struct {
		name       string
		clientRack string
		followers  []ReadReplica
		want       int32
	}{
		{"no client rack", "", []ReadReplica{{ID: 2, LogEndOffset: 10}}, -1},
		{"leader in the client's rack", "rack-a", []ReadReplica{{ID: 1, LogEndOffset: 10}}, -1},
		{"no replica in the client's rack", "rack-d", []ReadReplica{{ID: 2, LogEndOffset: 10}}, -1},
		{"the follower in the client's rack", "rack-c", []ReadReplica{{ID: 2, LogEndOffset: 10}, {ID: 3, LogEndOffset: 9}}, 3},
		{"highest log end offset wins", "rack-b", []ReadReplica{{ID: 2, LogEndOffset: 9}, {ID: 4, LogEndOffset: 10}}, 4},
		{"then the most recently caught up", "rack-b", []ReadReplica{{ID: 2, LogEndOffset: 10, SinceCaughtUp: time.Second}, {ID: 4, LogEndOffset: 10, SinceCaughtUp: 2 * time.Second}}, 2},
		{"then the higher id", "rack-b", []ReadReplica{{ID: 2, LogEndOffset: 10}, {ID: 4, LogEndOffset: 10}}, 4},
		{"a follower without an endpoint has no rack", "rack-x", []ReadReplica{{ID: 9, LogEndOffset: 10}}, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SelectRackAware(tc.clientRack, rackOf, leader, tc.followers); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// Only ISR followers that hold the fetch offset are candidates; a follower
// whose join of the ISR is only proposed is not one yet.
func TestReadReplicasCandidates(t *testing.T) {
	f := newFixture(t, State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2, 3, 4, 5}, ISR: []int32{1, 2, 3, 5}})
	f.produce(10)
	f.fetchFrom(2, 10, 0)
	f.fetchFrom(3, 4, 0)  // behind the fetch offset
	f.fetchFrom(4, 10, 0) // not in the ISR
	f.fetchFrom(5, 10, 6) // its log starts after the fetch offset
	f.clock.Advance(time.Second)
	leader, followers, ok := f.p.ReadReplicas(5)
	if !ok || leader.ID != 1 || leader.LogEndOffset != 10 || leader.SinceCaughtUp != 0 {
		t.Fatalf("leader %+v ok %v", leader, ok)
	}
	if len(followers) != 1 || followers[0].ID != 2 || followers[0].LogEndOffset != 10 || followers[0].SinceCaughtUp != time.Second {
		t.Fatalf("followers %+v, want only 2, caught up a second ago", followers)
	}
}
