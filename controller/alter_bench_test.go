package controller

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkAlterPartitionRejoin measures what the controller does for one
// leader's AlterPartition at a rejoin of the scale benchmark's size (50
// topics of 1,000 partitions, RF 3 over 3 brokers): broker 1 leads a third
// of them and proposes broker 3 back into their ISRs, then out again. It
// counts the decision, the state writes' ops and the UpdateMetadata for
// each live broker, each encoded as the channel's sender would.
func BenchmarkAlterPartitionRejoin(b *testing.B) {
	s := NewClusterState(1, 3)
	for id := int32(1); id <= 3; id++ {
		s.Live[id] = BrokerInfo{ID: id, Epoch: int64(100 + id), Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9000 + id, SecurityProtocol: "PLAINTEXT"}}}
	}
	var reqs [2]*kmsg.AlterPartitionRequest
	for i := range reqs {
		reqs[i] = kmsg.NewPtrAlterPartitionRequest()
		reqs[i].Version, reqs[i].BrokerID, reqs[i].BrokerEpoch = 3, 1, 101
	}
	led := 0
	for ti := range 50 {
		name := fmt.Sprintf("topic-%03d", ti)
		t := &TopicState{ID: [16]byte{byte(ti), 1}, Replicas: map[int32][]int32{}, States: map[int32]PartitionState{}}
		s.Topics[name] = t
		var rts [2]kmsg.AlterPartitionRequestTopic
		for i := range rts {
			rts[i] = kmsg.NewAlterPartitionRequestTopic()
			rts[i].TopicID = t.ID
		}
		for p := range int32(1000) {
			first := p % 3
			t.Replicas[p] = []int32{first + 1, (first+1)%3 + 1, (first+2)%3 + 1}
			leader := first + 1
			t.States[p] = PartitionState{Leader: leader, LeaderEpoch: 1, ISR: notBroker3(t.Replicas[p]), ControllerEpoch: 3}
			if leader != 1 {
				continue
			}
			led++
			for i, isr := range [][]int32{t.Replicas[p], notBroker3(t.Replicas[p])} {
				rp := kmsg.NewAlterPartitionRequestTopicPartition()
				rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = p, 1, int32(i)
				for _, id := range isr {
					e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
					e.BrokerID, e.BrokerEpoch = id, -1
					rp.NewEpochISR = append(rp.NewEpochISR, e)
				}
				rts[i].Partitions = append(rts[i].Partitions, rp)
			}
		}
		for i := range reqs {
			reqs[i].Topics = append(reqs[i].Topics, rts[i])
		}
	}
	b.ResetTimer()
	for i := range b.N {
		// The partition epochs run 0, 1, 2, ...: each round's requests
		// name the version the previous round left.
		req := reqs[i%2]
		for ti := range req.Topics {
			for pi := range req.Topics[ti].Partitions {
				req.Topics[ti].Partitions[pi].PartitionEpoch = int32(i)
			}
		}
		resp, a := s.OnAlterPartition(req)
		if resp.ErrorCode != 0 || len(a.Writes) != led {
			b.Fatalf("error %d, %d writes", resp.ErrorCode, len(a.Writes))
		}
		if _, err := stateWriteOps(b.Context(), nil, 1, s, a.Writes, a.Assignments); err != nil {
			b.Fatal(err)
		}
		var um updateMetadataOnce
		for id, tps := range a.UpdateMetadata {
			kmsg.NewRequestFormatter().AppendRequest(nil, um.build(s, id, tps), 1)
		}
	}
}

func notBroker3(ids []int32) []int32 {
	return slices.DeleteFunc(slices.Clone(ids), func(id int32) bool { return id == 3 })
}
