package controller

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// rackList splits Kafka-style test input (broker id -> rack) into the sorted
// broker ids and their racks, as the callers of PlaceReplicas pass them.
func rackList(m map[int32]string) ([]int32, []string) {
	var ids []int32
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	racks := make([]string, len(ids))
	for i, id := range ids {
		racks[i] = m[id]
	}
	return ids, racks
}

// The cases of Kafka's AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers.
func TestRackAlternatedBrokerList(t *testing.T) {
	m := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
	ids, racks := rackList(m)
	if got, want := rackAlternated(ids, racks), []int32{0, 3, 1, 5, 4, 2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("alternated %v, want %v", got, want)
	}
	delete(m, 5)
	ids, racks = rackList(m)
	if got, want := rackAlternated(ids, racks), []int32{0, 3, 1, 4, 2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("alternated without 5: %v, want %v", got, want)
	}
}

func TestPlaceReplicasRackAwareKafkaExample(t *testing.T) {
	ids, racks := rackList(map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"})
	got, err := PlaceReplicas(ids, racks, 7, 3, 0, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32][]int32{
		0: {0, 3, 1}, 1: {3, 1, 5}, 2: {1, 5, 4}, 3: {5, 4, 2},
		4: {4, 2, 0}, 5: {2, 0, 3}, 6: {0, 4, 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// The remaining AdminRackAwareTest cases check distributions, as Kafka's
// checkReplicaDistribution does: every partition has rf distinct brokers on
// min(rf, racks) racks, and (where Kafka checks it) leaders and replicas are
// spread evenly over brokers.
func TestPlaceReplicasRackAwareDistribution(t *testing.T) {
	six := map[int32]string{0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
	cases := []struct {
		name            string
		racks           map[int32]string
		parts           int32
		rf              int16
		start           int
		startPartition  int32
		evenLeaders     bool
		evenReplicas    bool
		rackAwareChecks bool
	}{
		{"rackAware", six, 6, 3, 2, 0, true, true, true},
		{"randomStart", six, 6, 3, -1, 0, true, true, true},
		{"unevenReplicas", six, 13, 3, 0, 0, false, false, true},
		{"unevenRacks", map[int32]string{0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}, 12, 3, -1, 0, true, false, true},
		{"twoReplicas", six, 12, 2, -1, 0, true, true, true},
		{"expansion", map[int32]string{6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}, 12, 2, -1, 12, true, true, true},
		{"twoReplicasSix", six, 6, 2, -1, 0, true, true, true},
		{"threeBrokers", map[int32]string{0: "rack1", 1: "rack2", 4: "rack3"}, 3, 2, -1, 0, true, true, true},
		{"large", map[int32]string{0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1", 6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack1", 11: "rack3"}, 96, 3, -1, 0, true, true, true},
		{"moreReplicasThanRacks", map[int32]string{0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}, 6, 5, -1, 0, false, false, true},
		{"lessReplicasThanRacks", map[int32]string{0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}, 6, 2, -1, 0, false, false, true},
		{"singleRack", map[int32]string{0: "rack1", 1: "rack1", 2: "rack1", 3: "rack1", 4: "rack1", 5: "rack1"}, 6, 3, -1, 0, true, false, true},
		{"skipAssigned", map[int32]string{0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}, 6, 4, 2, 0, false, false, false},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ids, racks := rackList(c.racks)
			numRacks := len(slices.Compact(slices.Sorted(slices.Values(racks))))
			a, err := PlaceReplicas(ids, racks, c.parts, c.rf, c.start, c.start, c.startPartition, r)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) != int(c.parts) {
				t.Fatalf("%d partitions, want %d", len(a), c.parts)
			}
			leaders, replicas := map[int32]int{}, map[int32]int{}
			for p := c.startPartition; p < c.startPartition+c.parts; p++ {
				reps := a[p]
				if len(reps) != int(c.rf) || len(slices.Compact(slices.Sorted(slices.Values(reps)))) != int(c.rf) {
					t.Fatalf("partition %d: replicas %v", p, reps)
				}
				onRacks := map[string]bool{}
				for _, b := range reps {
					onRacks[c.racks[b]] = true
					replicas[b]++
				}
				leaders[reps[0]]++
				if c.rackAwareChecks && len(onRacks) != min(int(c.rf), numRacks) {
					t.Fatalf("partition %d: %v on %d racks, want %d", p, reps, len(onRacks), min(int(c.rf), numRacks))
				}
			}
			if c.evenLeaders {
				for _, id := range ids {
					if leaders[id] != int(c.parts)/len(ids) {
						t.Fatalf("broker %d leads %d, want %d: %v", id, leaders[id], int(c.parts)/len(ids), a)
					}
				}
			}
			if c.evenReplicas {
				for _, id := range ids {
					if want := int(c.parts) * int(c.rf) / len(ids); replicas[id] != want {
						t.Fatalf("broker %d holds %d, want %d: %v", id, replicas[id], want, a)
					}
				}
			}
		})
	}
}

// Kafka refuses a rack-aware assignment when only some brokers have a rack
// (RackAwareMode.Enforced, which CreateTopics and CreatePartitions use), and
// ignores racks when none has one.
func TestPlaceReplicasPartialRacks(t *testing.T) {
	_, err := PlaceReplicas([]int32{1, 2, 3}, []string{"a", "", "b"}, 3, 2, 0, 0, 0, nil)
	if ce, ok := err.(*codeError); !ok || ce.code != kerr.UnknownServerError.Code {
		t.Fatalf("partial racks: %v", err)
	}
	got, err := PlaceReplicas([]int32{0, 1, 2, 3, 4}, []string{"", "", "", "", ""}, 10, 3, 0, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := AssignReplicas([]int32{0, 1, 2, 3, 4}, 10, 3, 0, 0, 0, nil)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("no racks: %v, want the rack-unaware %v", got, want)
	}
}

// CreateTopics and CreatePartitions place replicas by the racks the brokers
// registered in /brokers/ids.
func TestCreateTopicsRackAware(t *testing.T) {
	ctx := context.Background()
	db := testDB(t)
	st := db.NewSession()
	for id, rack := range map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"} {
		b := plaintext(id)
		b.Rack = rack
		if _, err := RegisterBroker(ctx, db.NewSession(), b); err != nil {
			t.Fatal(err)
		}
	}
	res := CreateTopics(ctx, st, []TopicSpec{{Name: "t", NumPartitions: 12, ReplicationFactor: 3}}, false, WithRand(rand.New(rand.NewPCG(5, 6))))
	if res[0].ErrorCode != 0 {
		t.Fatalf("create: %+v", res[0])
	}
	checkRacks := func(stage string) {
		ta, err := ReadTopic(ctx, st, "t")
		if err != nil {
			t.Fatal(err)
		}
		rackOf := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
		for p, reps := range ta.Partitions {
			seen := map[string]bool{}
			for _, b := range reps {
				seen[rackOf[b]] = true
			}
			if len(seen) != 3 {
				t.Fatalf("%s: partition %d replicas %v are not on 3 racks", stage, p, reps)
			}
		}
	}
	checkRacks("create")
	if code, msg := CreatePartitions(ctx, st, "t", 20, nil, false); code != 0 {
		t.Fatalf("create partitions: %d %s", code, msg)
	}
	checkRacks("create partitions")
}
