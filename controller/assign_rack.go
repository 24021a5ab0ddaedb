package controller

import (
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// PlaceReplicas is Kafka's AdminUtils.assignReplicasToBrokers in
// RackAwareMode.Enforced, the mode of CreateTopics, auto-creation and
// CreatePartitions: brokers (sorted) with racks[i] the broker.rack of
// brokers[i] ("" when unset). Without any rack it is the rack-unaware
// AssignReplicas; with a rack on every broker it spreads each partition over
// as many racks as it can; with racks on only some it fails, as Kafka's
// AdminOperationException does (an UNKNOWN_SERVER_ERROR on the wire).
func PlaceReplicas(brokers []int32, racks []string, nPartitions int32, replicationFactor int16, startIndex, shift int, startPartition int32, r *rand.Rand) (map[int32][]int32, error) {
	withRack := 0
	for _, rk := range racks {
		if rk != "" {
			withRack++
		}
	}
	if withRack == 0 {
		return AssignReplicas(brokers, nPartitions, replicationFactor, startIndex, shift, startPartition, r)
	}
	if err := checkAssignCounts(len(brokers), nPartitions, replicationFactor); err != nil {
		return nil, err
	}
	if withRack != len(brokers) {
		return nil, errCode(kerr.UnknownServerError, "Not all brokers have rack information for replica rack aware assignment.")
	}
	rackOf := make(map[int32]string, len(brokers))
	for i, b := range brokers {
		rackOf[b] = racks[i]
	}
	numRacks := len(slices.Compact(slices.Sorted(slices.Values(racks))))
	arranged := rackAlternated(brokers, racks)
	n := len(arranged)
	return spread(n, nPartitions, startIndex, shift, startPartition, r, func(first, shift int) []int32 {
		leader := arranged[first]
		replicas := []int32{leader}
		racksUsed := map[string]bool{rackOf[leader]: true}
		used := map[int32]bool{leader: true}
		k := 0
		for range int(replicationFactor) - 1 {
			for {
				// The follower candidates walk the rack-alternated list at a
				// shift scaled by the rack count, so consecutive partitions
				// start their followers on different racks.
				b := arranged[(first+1+(shift*numRacks+k)%(n-1))%n]
				k++
				rk := rackOf[b]
				// Skip a broker on a rack that already has a replica while a
				// rack has none, and a broker already chosen while one is not.
				if (!racksUsed[rk] || len(racksUsed) == numRacks) && (!used[b] || len(used) == n) {
					replicas = append(replicas, b)
					racksUsed[rk] = true
					used[b] = true
					break
				}
			}
		}
		return replicas
	}), nil
}

// rackAlternated orders brokers by taking one from each rack in turn (racks
// by name, brokers by id within a rack), Kafka's getRackAlternatedBrokerList:
// a round robin over it then alternates racks.
func rackAlternated(brokers []int32, racks []string) []int32 {
	byRack := map[string][]int32{}
	for i, b := range brokers {
		byRack[racks[i]] = append(byRack[racks[i]], b)
	}
	names := make([]string, 0, len(byRack))
	for rk, bs := range byRack {
		names = append(names, rk)
		slices.Sort(bs)
	}
	slices.Sort(names)
	out := make([]int32, 0, len(brokers))
	for i := 0; len(out) < len(brokers); i++ {
		rk := names[i%len(names)]
		if bs := byRack[rk]; len(bs) > 0 {
			out = append(out, bs[0])
			byRack[rk] = bs[1:]
		}
	}
	return out
}
