package controller

import (
	"maps"
	"reflect"
	"slices"
	"testing"
)

func liveSet(ids ...int32) func(int32) bool {
	return func(id int32) bool { return slices.Contains(ids, id) }
}

func TestElectLeader(t *testing.T) {
	tests := []struct {
		name        string
		replicas    []int32
		isr         []int32
		live        []int32
		unclean     bool
		wantLeader  int32
		wantISR     []int32
		wantUnclean bool
		wantOK      bool
	}{
		{name: "preferred in isr", replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, live: []int32{1, 2, 3}, wantLeader: 1, wantISR: []int32{1, 2, 3}, wantOK: true},
		{name: "preferred dead", replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, live: []int32{2, 3}, wantLeader: 2, wantISR: []int32{2, 3}, wantOK: true},
		{name: "assignment order not isr order", replicas: []int32{3, 2, 1}, isr: []int32{1, 2}, live: []int32{1, 2}, wantLeader: 2, wantISR: []int32{1, 2}, wantOK: true},
		{name: "live replica outside isr is not clean", replicas: []int32{1, 2}, isr: []int32{1}, live: []int32{2}, wantLeader: NoLeader, wantOK: false},
		{name: "unclean picks first live replica", replicas: []int32{1, 2, 3}, isr: []int32{1}, live: []int32{3, 2}, unclean: true, wantLeader: 2, wantISR: []int32{2}, wantUnclean: true, wantOK: true},
		{name: "clean preferred over unclean", replicas: []int32{1, 2, 3}, isr: []int32{3}, live: []int32{2, 3}, unclean: true, wantLeader: 3, wantISR: []int32{3}, wantOK: true},
		{name: "nothing live", replicas: []int32{1, 2}, isr: []int32{1, 2}, live: nil, unclean: true, wantLeader: NoLeader, wantOK: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, isr, unclean, ok := ElectLeader(tc.replicas, tc.isr, liveSet(tc.live...), tc.unclean)
			if l != tc.wantLeader || !reflect.DeepEqual(isr, tc.wantISR) || unclean != tc.wantUnclean || ok != tc.wantOK {
				t.Fatalf("got leader %d isr %v unclean %v ok %v", l, isr, unclean, ok)
			}
		})
	}
}

// cluster builds a state at controller epoch 3 with live brokers and one
// topic "t" whose partitions have the given replicas and (optional) states.
func cluster(live []int32, replicas map[int32][]int32, states map[int32]PartitionState) *ClusterState {
	s := NewClusterState(1, 3)
	for _, id := range live {
		s.Live[id] = BrokerInfo{ID: id, Epoch: int64(100 + id)}
	}
	// Cloned so that tests can compare against their inputs afterwards.
	st := maps.Clone(states)
	if st == nil {
		st = map[int32]PartitionState{}
	}
	s.Topics["t"] = &TopicState{ID: [16]byte{9}, Replicas: replicas, States: st}
	return s
}

func brokersOf(m map[int32]map[TP]bool) []int32 {
	return sortedKeys(m)
}

func TestOnNewPartitions(t *testing.T) {
	s := cluster([]int32{1, 2}, map[int32][]int32{0: {2, 1}, 1: {3, 1}, 2: {3}}, nil)
	a := s.OnNewPartitions([]TP{{"t", 2}, {"t", 0}, {"t", 1}})
	want := []StateWrite{
		{TP: TP{"t", 0}, State: PartitionState{Leader: 2, ISR: []int32{2, 1}, ControllerEpoch: 3}, Create: true},
		{TP: TP{"t", 1}, State: PartitionState{Leader: 1, ISR: []int32{1}, ControllerEpoch: 3}, Create: true},
	}
	if !reflect.DeepEqual(a.Writes, want) {
		t.Fatalf("writes %+v", a.Writes)
	}
	// Partition 2 has no live replica: it stays new.
	if _, ok := s.Topics["t"].States[2]; ok {
		t.Fatal("partition without live replicas started")
	}
	wantLAI := map[int32]map[TP]bool{1: {{"t", 0}: true, {"t", 1}: true}, 2: {{"t", 0}: true}}
	if !reflect.DeepEqual(a.LeaderAndISR, wantLAI) {
		t.Fatalf("leaderAndISR %v", a.LeaderAndISR)
	}
	wantUM := map[int32]map[TP]bool{1: {{"t", 0}: true, {"t", 1}: true}, 2: {{"t", 0}: true, {"t", 1}: true}}
	if !reflect.DeepEqual(a.UpdateMetadata, wantUM) {
		t.Fatalf("updateMetadata %v", a.UpdateMetadata)
	}
	// Starting again does nothing.
	if again := s.OnNewPartitions([]TP{{"t", 0}}); !again.Empty() {
		t.Fatalf("second start: %+v", again)
	}
}

func TestOnBrokersChange(t *testing.T) {
	ps := func(leader, epoch int32, isr ...int32) PartitionState {
		return PartitionState{Leader: leader, LeaderEpoch: epoch, ISR: isr, ControllerEpoch: 2, ZkVersion: 4}
	}
	tests := []struct {
		name       string
		live       []int32
		replicas   map[int32][]int32
		states     map[int32]PartitionState
		newLive    []int32
		bounce     []int32 // brokers whose epoch changes
		unclean    bool
		wantStates map[int32]PartitionState // written states (ZkVersion = expected+1)
		wantLAI    map[int32][]TP
	}{
		{
			name: "leader dies, next isr member leads", live: []int32{1, 2, 3}, newLive: []int32{2, 3},
			replicas:   map[int32][]int32{0: {1, 2, 3}},
			states:     map[int32]PartitionState{0: ps(1, 5, 1, 2, 3)},
			wantStates: map[int32]PartitionState{0: {Leader: 2, LeaderEpoch: 6, ISR: []int32{2, 3}, ControllerEpoch: 3, ZkVersion: 5}},
			wantLAI:    map[int32][]TP{2: {{"t", 0}}, 3: {{"t", 0}}},
		},
		{
			name: "follower dies, isr shrinks, epoch bumps", live: []int32{1, 2, 3}, newLive: []int32{1, 2},
			replicas:   map[int32][]int32{0: {1, 2, 3}},
			states:     map[int32]PartitionState{0: ps(1, 5, 1, 2, 3)},
			wantStates: map[int32]PartitionState{0: {Leader: 1, LeaderEpoch: 6, ISR: []int32{1, 2}, ControllerEpoch: 3, ZkVersion: 5}},
			wantLAI:    map[int32][]TP{1: {{"t", 0}}, 2: {{"t", 0}}},
		},
		{
			name: "follower outside isr dies: nothing written", live: []int32{1, 2, 3}, newLive: []int32{1, 2},
			replicas:   map[int32][]int32{0: {1, 2, 3}},
			states:     map[int32]PartitionState{0: ps(1, 5, 1, 2)},
			wantStates: map[int32]PartitionState{},
			wantLAI:    map[int32][]TP{},
		},
		{
			name: "last isr member dies: no leader, isr kept", live: []int32{1, 2}, newLive: []int32{2},
			replicas:   map[int32][]int32{0: {1, 2}},
			states:     map[int32]PartitionState{0: ps(1, 5, 1)},
			wantStates: map[int32]PartitionState{0: {Leader: NoLeader, LeaderEpoch: 6, ISR: []int32{1}, ControllerEpoch: 3, ZkVersion: 5}},
			wantLAI:    map[int32][]TP{2: {{"t", 0}}},
		},
		{
			name: "last isr member dies, unclean allowed", live: []int32{1, 2}, newLive: []int32{2}, unclean: true,
			replicas:   map[int32][]int32{0: {1, 2}},
			states:     map[int32]PartitionState{0: ps(1, 5, 1)},
			wantStates: map[int32]PartitionState{0: {Leader: 2, LeaderEpoch: 6, ISR: []int32{2}, ControllerEpoch: 3, ZkVersion: 5}},
			wantLAI:    map[int32][]TP{2: {{"t", 0}}},
		},
		{
			name: "isr member returns to leaderless partition", live: []int32{2}, newLive: []int32{1, 2},
			replicas:   map[int32][]int32{0: {1, 2}},
			states:     map[int32]PartitionState{0: ps(NoLeader, 6, 1)},
			wantStates: map[int32]PartitionState{0: {Leader: 1, LeaderEpoch: 7, ISR: []int32{1}, ControllerEpoch: 3, ZkVersion: 5}},
			wantLAI:    map[int32][]TP{1: {{"t", 0}}, 2: {{"t", 0}}},
		},
		{
			name: "new broker starts a partition that had no live replica", live: []int32{1}, newLive: []int32{1, 2},
			replicas:   map[int32][]int32{0: {2}, 1: {1}},
			states:     map[int32]PartitionState{1: ps(1, 0, 1)},
			wantStates: map[int32]PartitionState{0: {Leader: 2, LeaderEpoch: 0, ISR: []int32{2}, ControllerEpoch: 3, ZkVersion: 0}},
			wantLAI:    map[int32][]TP{2: {{"t", 0}}},
		},
		{
			// As Kafka's processBrokerChange: a bounced broker is handled as
			// failed (onBrokerFailure, without it among the live brokers)
			// before it starts again, so it neither keeps the leadership
			// nor its place in the ISR: it may have lost unflushed records
			// in its crash and must catch up first.
			name: "bounced leader counts as dead and new", live: []int32{1, 2}, newLive: []int32{1, 2}, bounce: []int32{1},
			replicas:   map[int32][]int32{0: {1, 2}},
			states:     map[int32]PartitionState{0: ps(1, 5, 1, 2)},
			wantStates: map[int32]PartitionState{0: {Leader: 2, LeaderEpoch: 6, ISR: []int32{2}, ControllerEpoch: 3, ZkVersion: 5}},
			wantLAI:    map[int32][]TP{2: {{"t", 0}}},
		},
		{
			// Every ISR member bounced: the first leads again, alone in the
			// ISR (Kafka's onBrokerFailure keeps one member); the others
			// catch up first, as a restart may have cut their logs.
			name: "every isr member bounced: one leads, alone", live: []int32{1, 2}, newLive: []int32{1, 2}, bounce: []int32{1, 2},
			replicas:   map[int32][]int32{0: {1, 2}},
			states:     map[int32]PartitionState{0: ps(1, 5, 1, 2)},
			wantStates: map[int32]PartitionState{0: {Leader: 1, LeaderEpoch: 6, ISR: []int32{1}, ControllerEpoch: 3, ZkVersion: 5}},
			wantLAI:    map[int32][]TP{},
		},
		{
			// Kafka's onBrokerStartup after onBrokerFailure: the last ISR
			// member, bounced, is the only clean choice and leads again.
			name: "bounced last isr member leads again", live: []int32{1, 2}, newLive: []int32{1, 2}, bounce: []int32{1},
			replicas:   map[int32][]int32{0: {1, 2}},
			states:     map[int32]PartitionState{0: ps(1, 5, 1)},
			wantStates: map[int32]PartitionState{0: {Leader: 1, LeaderEpoch: 6, ISR: []int32{1}, ControllerEpoch: 3, ZkVersion: 5}},
			wantLAI:    map[int32][]TP{2: {{"t", 0}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := cluster(tc.live, tc.replicas, tc.states)
			newLive := map[int32]BrokerInfo{}
			for _, id := range tc.newLive {
				epoch := int64(100 + id)
				if slices.Contains(tc.bounce, id) {
					epoch += 1000
				}
				newLive[id] = BrokerInfo{ID: id, Epoch: epoch}
			}
			s.UncleanDefault = tc.unclean
			a := s.OnBrokersChange(newLive)
			written := map[int32]PartitionState{}
			for _, w := range a.Writes {
				if w.Create != (tc.states[w.TP.Partition].ISR == nil) {
					t.Errorf("write %+v: create flag wrong", w)
				}
				got := s.Topics["t"].States[w.TP.Partition]
				written[w.TP.Partition] = got
			}
			if !reflect.DeepEqual(written, tc.wantStates) {
				t.Fatalf("states\n got %+v\nwant %+v", written, tc.wantStates)
			}
			gotLAI := map[int32][]TP{}
			for id, m := range a.LeaderAndISR {
				added := false
				for _, n := range tc.newLive {
					if n == id && (!slices.Contains(tc.live, id) || slices.Contains(tc.bounce, id)) {
						added = true
					}
				}
				if added {
					continue // new brokers get all their partitions; checked below
				}
				gotLAI[id] = keys(m)
			}
			for id, tps := range tc.wantLAI {
				if slices.Contains(tc.live, id) && !slices.Contains(tc.bounce, id) && !reflect.DeepEqual(gotLAI[id], tps) {
					t.Errorf("leaderAndISR to %d: %v, want %v", id, gotLAI[id], tps)
				}
			}
			// Every live broker hears about the change; new brokers get every
			// started partition and LeaderAndISR for each they host.
			if got := brokersOf(a.UpdateMetadata); !reflect.DeepEqual(got, sortedKeys(newLive)) {
				t.Errorf("updateMetadata to %v, want all live %v", got, sortedKeys(newLive))
			}
			for id := range newLive {
				if slices.Contains(tc.live, id) && !slices.Contains(tc.bounce, id) {
					continue
				}
				for p, reps := range tc.replicas {
					tp := TP{"t", p}
					if !hasState(s, tp) {
						continue
					}
					if !a.UpdateMetadata[id][tp] {
						t.Errorf("new broker %d lacks metadata for %v", id, tp)
					}
					if _, ok := a.LeaderAndISR[id][tp]; slices.Contains(reps, id) && !ok {
						t.Errorf("new broker %d lacks LeaderAndISR for %v", id, tp)
					}
				}
			}
		})
	}
}

func TestOnTopicDeletion(t *testing.T) {
	s := cluster([]int32{1, 2}, map[int32][]int32{0: {1, 2}, 1: {2, 3}}, map[int32]PartitionState{0: {Leader: 1, ISR: []int32{1, 2}}, 1: {Leader: 2, ISR: []int32{2}}})
	a, allLive := s.OnTopicDeletion("t")
	if allLive {
		t.Fatal("broker 3 is dead, yet all replicas reported live")
	}
	want := map[int32][]TP{1: {{"t", 0}}, 2: {{"t", 0}, {"t", 1}}}
	if !reflect.DeepEqual(a.StopReplica, want) {
		t.Fatalf("stopReplica %v", a.StopReplica)
	}
	um := BuildUpdateMetadata(s, 1, a.UpdateMetadata[1])
	if len(um.TopicStates) != 1 || len(um.TopicStates[0].PartitionStates) != 2 {
		t.Fatalf("updateMetadata %+v", um.TopicStates)
	}
	for _, p := range um.TopicStates[0].PartitionStates {
		if p.Leader != LeaderDuringDelete {
			t.Fatalf("partition %d leader %d, want -2", p.Partition, p.Leader)
		}
	}
	// Deleting topics are not restarted by broker changes.
	if acts := s.OnBrokersChange(map[int32]BrokerInfo{1: s.Live[1]}); len(acts.Writes) != 0 {
		t.Fatalf("writes for a topic being deleted: %+v", acts.Writes)
	}
	s.OnTopicDeleted("t")
	if len(s.Topics) != 0 || len(s.Deleting) != 0 {
		t.Fatal("topic not forgotten")
	}
}

func TestOnElected(t *testing.T) {
	s := cluster([]int32{1, 2}, map[int32][]int32{0: {3, 1}, 1: {2}, 2: {1, 2}}, map[int32]PartitionState{
		0: {Leader: 3, LeaderEpoch: 2, ISR: []int32{3, 1}, ZkVersion: 1},
		1: {Leader: 2, LeaderEpoch: 1, ISR: []int32{2}, ZkVersion: 0},
	})
	a := s.OnElected()
	// Partition 0 lost its leader while no controller watched: re-elected.
	// Partition 2 was never started: started now.
	if got := s.Topics["t"].States[0]; got.Leader != 1 || got.LeaderEpoch != 3 || !reflect.DeepEqual(got.ISR, []int32{1}) {
		t.Fatalf("partition 0: %+v", got)
	}
	if got := s.Topics["t"].States[2]; got.Leader != 1 || !reflect.DeepEqual(got.ISR, []int32{1, 2}) {
		t.Fatalf("partition 2: %+v", got)
	}
	if len(a.Writes) != 2 {
		t.Fatalf("writes %+v", a.Writes)
	}
	wantLAI := map[int32][]TP{1: {{"t", 0}, {"t", 2}}, 2: {{"t", 1}, {"t", 2}}}
	for id, tps := range wantLAI {
		if got := keys(a.LeaderAndISR[id]); !reflect.DeepEqual(got, tps) {
			t.Errorf("leaderAndISR to %d: %v, want %v", id, got, tps)
		}
	}
	for _, id := range []int32{1, 2} {
		if got := keys(a.UpdateMetadata[id]); len(got) != 3 {
			t.Errorf("updateMetadata to %d: %v", id, got)
		}
	}
}

// TestOnElectedShrinksISROfDeadFollowers: a follower that died while no
// controller watched (say, the old controller itself) leaves the ISR when
// the new controller takes over, with the leader kept and the epoch bumped.
func TestOnElectedShrinksISROfDeadFollowers(t *testing.T) {
	s := cluster([]int32{1, 2}, map[int32][]int32{0: {1, 2, 3}}, map[int32]PartitionState{
		0: {Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, ZkVersion: 2},
	})
	a := s.OnElected()
	if got := s.Topics["t"].States[0]; got.Leader != 1 || got.LeaderEpoch != 5 || !reflect.DeepEqual(got.ISR, []int32{1, 2}) {
		t.Fatalf("partition 0: %+v, want leader 1, epoch 5, ISR [1 2]", got)
	}
	if len(a.Writes) != 1 || a.Writes[0].ExpectedVersion != 2 {
		t.Fatalf("writes %+v, want one fenced by version 2", a.Writes)
	}
}

// TestOnElectedBouncedReplicas: a broker whose registration is newer than
// a partition's state restarted after its place there was written (say it
// was the controller, and no controller saw it go): as a bounce seen live,
// it loses the leadership and its place in the ISR, since its restart may
// have lost unflushed records (the simulation's power failures found it).
func TestOnElectedBouncedReplicas(t *testing.T) {
	s := cluster([]int32{1, 2, 3}, map[int32][]int32{0: {1, 2, 3}, 1: {2, 1, 3}, 2: {3, 1}}, map[int32]PartitionState{
		0: {Leader: 1, LeaderEpoch: 4, ISR: []int32{1, 2, 3}, ZkVersion: 2, Mzxid: 150},
		1: {Leader: 2, LeaderEpoch: 7, ISR: []int32{2, 1}, ZkVersion: 3, Mzxid: 160},
		2: {Leader: 3, LeaderEpoch: 1, ISR: []int32{3, 1}, ZkVersion: 1, Mzxid: 500},
	})
	s.Live[1] = BrokerInfo{ID: 1, Epoch: 400} // registered again after the writes of p0 and p1
	s.OnElected()
	want := map[int32]PartitionState{
		0: {Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3}},
		1: {Leader: 2, LeaderEpoch: 8, ISR: []int32{2}},
		2: {Leader: 3, LeaderEpoch: 1, ISR: []int32{3, 1}}, // written after broker 1 registered
	}
	for p, w := range want {
		got := s.Topics["t"].States[p]
		if got.Leader != w.Leader || got.LeaderEpoch != w.LeaderEpoch || !reflect.DeepEqual(got.ISR, w.ISR) {
			t.Errorf("partition %d: %+v, want leader %d, epoch %d, ISR %v", p, got, w.Leader, w.LeaderEpoch, w.ISR)
		}
	}
}

func TestBuildRequests(t *testing.T) {
	s := cluster([]int32{1, 2}, map[int32][]int32{0: {2, 1, 3}}, map[int32]PartitionState{0: {Leader: 2, LeaderEpoch: 4, ISR: []int32{2, 1}, ControllerEpoch: 3, ZkVersion: 7}})
	s.Live[2] = BrokerInfo{ID: 2, Epoch: 102, Rack: "r", Endpoints: []Endpoint{{Name: "CLIENT", Host: "c", Port: 1, SecurityProtocol: "SSL"}, {Name: "PLAINTEXT", Host: "h2", Port: 9092, SecurityProtocol: "PLAINTEXT"}}}
	lai := BuildLeaderAndISR(s, 1, map[TP]bool{{"t", 0}: true}, "PLAINTEXT")
	if lai.Version != 7 || lai.ControllerID != 1 || lai.ControllerEpoch != 3 || lai.BrokerEpoch != 101 || lai.Type != 0 {
		t.Fatalf("header %+v", lai)
	}
	ts := lai.TopicStates[0]
	p := ts.PartitionStates[0]
	if ts.Topic != "t" || ts.TopicID != [16]byte{9} || p.Leader != 2 || p.LeaderEpoch != 4 || p.ZKVersion != 7 || !p.IsNew ||
		!reflect.DeepEqual(p.ISR, []int32{2, 1}) || !reflect.DeepEqual(p.Replicas, []int32{2, 1, 3}) {
		t.Fatalf("partition %+v", p)
	}
	if len(lai.LiveLeaders) != 1 || lai.LiveLeaders[0].BrokerID != 2 || lai.LiveLeaders[0].Host != "h2" || lai.LiveLeaders[0].Port != 9092 {
		t.Fatalf("live leaders %+v", lai.LiveLeaders)
	}
	um := BuildUpdateMetadata(s, 2, map[TP]bool{{"t", 0}: true})
	if um.Version != 8 || um.BrokerEpoch != 102 || len(um.LiveBrokers) != 2 {
		t.Fatalf("updateMetadata %+v", um)
	}
	up := um.TopicStates[0].PartitionStates[0]
	if !reflect.DeepEqual(up.OfflineReplicas, []int32{3}) || up.Leader != 2 {
		t.Fatalf("partition %+v", up)
	}
	b2 := um.LiveBrokers[1]
	if b2.ID != 2 || b2.Rack == nil || *b2.Rack != "r" || len(b2.Endpoints) != 2 || b2.Endpoints[0].SecurityProtocol != 1 || b2.Endpoints[0].ListenerName != "CLIENT" {
		t.Fatalf("live broker %+v", b2)
	}
	// kmsg can encode what we built (catches fields invalid for the version).
	for _, r := range []interface{ AppendTo([]byte) []byte }{lai, um, BuildStopReplica(s, 1, []TP{{"t", 0}})} {
		if len(r.AppendTo(nil)) == 0 {
			t.Fatal("empty encoding")
		}
	}
}
