package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// zkModel stands in for the state znodes: it checks that every write the
// decisions ask for would succeed (creates of absent nodes, sets at the
// current version) and remembers the result.
type zkModel map[TP]PartitionState

func (z zkModel) apply(t *testing.T, step string, a Actions) {
	t.Helper()
	for _, w := range a.Writes {
		cur, ok := z[w.TP]
		switch {
		case w.Create && ok:
			t.Fatalf("%s: create of existing state %v", step, w.TP)
		case !w.Create && !ok:
			t.Fatalf("%s: set of missing state %v", step, w.TP)
		case !w.Create && cur.ZkVersion != w.ExpectedVersion:
			t.Fatalf("%s: set %v at version %d, znode is at %d", step, w.TP, w.ExpectedVersion, cur.ZkVersion)
		}
		st := w.State
		st.ZkVersion = 0
		if !w.Create {
			st.ZkVersion = cur.ZkVersion + 1
		}
		z[w.TP] = st
	}
}

// TestDecisionsInvariants drives the pure core with random event sequences
// and checks Kafka's invariants after every step.
func TestDecisionsInvariants(t *testing.T) {
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runRandomCluster(t, seed) })
	}
}

func runRandomCluster(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	unclean := seed%3 == 0
	s := NewClusterState(1, 1)
	s.UncleanDefault = unclean
	z := zkModel{}
	nextEpoch := int64(1)
	allBrokers := []int32{1, 2, 3, 4, 5}
	live := map[int32]BrokerInfo{}
	for _, id := range allBrokers {
		if r.IntN(3) > 0 {
			live[id] = BrokerInfo{ID: id, Epoch: nextEpoch}
			nextEpoch++
		}
	}
	z.apply(t, "start", s.OnBrokersChange(live))
	lastEpoch, lastLeader := map[TP]int32{}, map[TP]int32{}
	topicN := 0
	for step := range 60 {
		var name string
		var a Actions
		switch k := r.IntN(7); {
		case k == 0: // a broker dies
			ids := sortedKeys(live)
			if len(ids) == 0 {
				continue
			}
			delete(live, ids[r.IntN(len(ids))])
			name = "death"
			a = s.OnBrokersChange(clone(live))
		case k == 1: // a broker joins or restarts
			id := allBrokers[r.IntN(len(allBrokers))]
			live[id] = BrokerInfo{ID: id, Epoch: nextEpoch}
			nextEpoch++
			name = "join"
			a = s.OnBrokersChange(clone(live))
		case k == 2: // a new topic
			topicN++
			tn := fmt.Sprintf("t%d", topicN)
			rf := 1 + r.IntN(3)
			assign, err := AssignReplicas(allBrokers, int32(1+r.IntN(4)), int16(rf), -1, -1, 0, r)
			if err != nil {
				t.Fatal(err)
			}
			added := s.OnAssignmentChange(tn, TopicAssignment{Name: tn, TopicID: [16]byte{byte(topicN)}, Partitions: assign})
			name = "create " + tn
			a = s.OnNewPartitions(added)
		case k == 3: // a leader changes its ISR
			tps := s.AllPartitions()
			if len(tps) == 0 {
				continue
			}
			tp := tps[r.IntN(len(tps))]
			st, ok := s.Topics[tp.Topic].States[tp.Partition]
			if !ok || st.Leader < 0 || s.Deleting[tp.Topic] {
				continue
			}
			isr := []int32{st.Leader}
			for _, rep := range s.Topics[tp.Topic].Replicas[tp.Partition] {
				if rep != st.Leader && r.IntN(2) == 0 {
					isr = append(isr, rep)
				}
			}
			req := alterReq(2, st.Leader, -1, st.LeaderEpoch, st.ZkVersion, isr...)
			req.Topics[0].TopicID = s.Topics[tp.Topic].ID
			req.Topics[0].Partitions[0].Partition = tp.Partition
			name = "alter"
			_, a = s.OnAlterPartition(req)
		case k == 4: // controlled shutdown, then the broker goes
			ids := sortedKeys(live)
			if len(ids) == 0 {
				continue
			}
			id := ids[r.IntN(len(ids))]
			_, _, a = s.OnControlledShutdown(id, live[id].Epoch)
			z.apply(t, "shutdown", a)
			checkInvariants(t, s, z, lastEpoch, lastLeader, step, "shutdown")
			delete(live, id)
			name = "shutdown death"
			a = s.OnBrokersChange(clone(live))
		case k == 5: // a topic is deleted
			names := sortedKeys(s.Topics)
			if len(names) == 0 {
				continue
			}
			tn := names[r.IntN(len(names))]
			name = "delete " + tn
			a, _ = s.OnTopicDeletion(tn)
			for id := range a.StopReplica {
				if !s.reachable(id) {
					t.Fatalf("StopReplica to unreachable broker %d", id)
				}
			}
			if r.IntN(2) == 0 {
				s.OnTopicDeleted(tn)
				for tp := range z {
					if tp.Topic == tn {
						delete(z, tp)
						delete(lastEpoch, tp)
						delete(lastLeader, tp)
					}
				}
			}
		default: // controller failover: a new controller loads the znodes
			ns := NewClusterState(1, s.Epoch+1)
			ns.Live = clone(live)
			ns.UncleanDefault = unclean
			for tn, tt := range s.Topics {
				nt := &TopicState{ID: tt.ID, Replicas: tt.Replicas, States: map[int32]PartitionState{}}
				for tp, st := range z {
					if tp.Topic == tn {
						nt.States[tp.Partition] = st
					}
				}
				ns.Topics[tn] = nt
				if s.Deleting[tn] {
					ns.Deleting[tn] = true
				}
			}
			s = ns
			name = "failover"
			a = s.OnElected()
		}
		z.apply(t, name, a)
		for id := range a.LeaderAndISR {
			if !s.reachable(id) {
				t.Fatalf("step %d %s: LeaderAndISR to unreachable broker %d", step, name, id)
			}
		}
		checkInvariants(t, s, z, lastEpoch, lastLeader, step, name)
	}
}

func checkInvariants(t *testing.T, s *ClusterState, z zkModel, lastEpoch, lastLeader map[TP]int32, step int, name string) {
	t.Helper()
	for _, tp := range s.AllPartitions() {
		tt := s.Topics[tp.Topic]
		replicas := tt.Replicas[tp.Partition]
		st, started := tt.States[tp.Partition]
		where := fmt.Sprintf("step %d %s: %v", step, name, tp)
		if s.Deleting[tp.Topic] {
			continue
		}
		if !started {
			if len(s.liveOf(replicas)) > 0 {
				t.Fatalf("%s: not started although replicas %v have live ones", where, replicas)
			}
			continue
		}
		if zst, ok := z[tp]; !ok || !slices.Equal(zst.ISR, st.ISR) || zst.Leader != st.Leader || zst.ZkVersion != st.ZkVersion || zst.LeaderEpoch != st.LeaderEpoch {
			t.Fatalf("%s: state %+v differs from znode %+v", where, st, zst)
		}
		if len(st.ISR) == 0 {
			t.Fatalf("%s: empty ISR", where)
		}
		seen := map[int32]bool{}
		for _, i := range st.ISR {
			if seen[i] || !slices.Contains(replicas, i) {
				t.Fatalf("%s: ISR %v not a set of replicas %v", where, st.ISR, replicas)
			}
			seen[i] = true
		}
		if st.Leader != NoLeader {
			if !slices.Contains(st.ISR, st.Leader) || !s.reachable(st.Leader) {
				t.Fatalf("%s: leader %d not a reachable ISR member (isr %v)", where, st.Leader, st.ISR)
			}
			for _, i := range st.ISR {
				if !s.reachable(i) {
					t.Fatalf("%s: dead broker %d left in ISR %v", where, i, st.ISR)
				}
			}
		} else {
			for _, i := range st.ISR {
				if s.isLive(i) {
					t.Fatalf("%s: no leader although ISR member %d is live", where, i)
				}
			}
		}
		if prev, ok := lastEpoch[tp]; ok && st.LeaderEpoch < prev {
			t.Fatalf("%s: leader epoch went back %d -> %d", where, prev, st.LeaderEpoch)
		}
		if prev, ok := lastLeader[tp]; ok && prev != st.Leader && st.LeaderEpoch == lastEpoch[tp] {
			t.Fatalf("%s: leader changed %d -> %d without a new leader epoch", where, prev, st.Leader)
		}
		lastEpoch[tp] = st.LeaderEpoch
		lastLeader[tp] = st.Leader
	}
}

func clone(m map[int32]BrokerInfo) map[int32]BrokerInfo {
	out := make(map[int32]BrokerInfo, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
