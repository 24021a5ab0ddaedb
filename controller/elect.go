package controller

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Election types of ElectLeaders.
const (
	ElectPreferred int8 = 0
	ElectUnclean   int8 = 1
)

// ElectionResult is the outcome of one partition's requested election.
type ElectionResult struct {
	ErrorCode    int16
	ErrorMessage string
}

// OnElectLeaders runs requested elections (the ElectLeaders API and
// kafka-leader-election.sh), as Kafka's controller does. Preferred: the
// first assigned replica takes over if it is live and in the ISR
// (ELECTION_NOT_NEEDED if it already leads, PREFERRED_LEADER_NOT_AVAILABLE
// if it cannot). Unclean: only for partitions without a live leader, the
// first live ISR member or else the first live replica. tps nil means every
// partition.
func (s *ClusterState) OnElectLeaders(electionType int8, tps []TP) (map[TP]ElectionResult, Actions) {
	a := newActions()
	if tps == nil {
		tps = s.AllPartitions()
	}
	out := map[TP]ElectionResult{}
	for _, tp := range tps {
		t := s.Topics[tp.Topic]
		var st PartitionState
		started := false
		if t != nil {
			st, started = t.States[tp.Partition]
		}
		if !started || s.Deleting[tp.Topic] {
			out[tp] = ElectionResult{kerr.UnknownTopicOrPartition.Code, "The partition does not exist."}
			continue
		}
		replicas := t.Replicas[tp.Partition]
		switch electionType {
		case ElectPreferred:
			preferred := replicas[0]
			switch {
			case st.Leader == preferred:
				out[tp] = ElectionResult{kerr.ElectionNotNeeded.Code, "Leader election not needed for topic partition."}
			case !s.replicaOnline(preferred, tp) || !slices.Contains(st.ISR, preferred):
				out[tp] = ElectionResult{kerr.PreferredLeaderNotAvailable.Code, "Failed to elect leader for partition " + tp.String() + " under strategy PreferredReplicaPartitionLeaderElectionStrategy"}
			default:
				s.changeState(&a, tp, PartitionState{Leader: preferred, LeaderEpoch: st.LeaderEpoch + 1, ISR: st.ISR, LeaderRecoveryState: st.LeaderRecoveryState})
				out[tp] = ElectionResult{}
			}
		case ElectUnclean:
			if st.Leader != NoLeader && s.isLive(st.Leader) {
				out[tp] = ElectionResult{kerr.ElectionNotNeeded.Code, "Leader election not needed for topic partition."}
				continue
			}
			leader, isr, unclean, ok := ElectLeader(replicas, st.ISR, s.isLive, true)
			if !ok {
				out[tp] = ElectionResult{kerr.EligibleLeadersNotAvailable.Code, "Failed to elect leader for partition " + tp.String() + " under strategy UncleanLeaderElectionStrategy"}
				continue
			}
			lrs := st.LeaderRecoveryState
			if unclean {
				lrs = 1 // RECOVERING, as Kafka marks an unclean leader
			}
			s.changeState(&a, tp, PartitionState{Leader: leader, LeaderEpoch: st.LeaderEpoch + 1, ISR: isr, LeaderRecoveryState: lrs})
			out[tp] = ElectionResult{}
		default:
			out[tp] = ElectionResult{kerr.InvalidRequest.Code, "Unknown election type."}
		}
	}
	return out, a
}

func (tp TP) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// ImbalancedPartitions picks the partitions that Kafka's automatic leader
// rebalance (auto.leader.rebalance.enable) would move back to their
// preferred replica: for each live broker whose share of partitions it
// prefers but does not lead exceeds percent
// (leader.imbalance.per.broker.percentage), those partitions whose
// preferred replica is live and in the ISR.
func (s *ClusterState) ImbalancedPartitions(percent int) []TP {
	preferredCount := map[int32]int{}
	notLeading := map[int32][]TP{}
	for _, tp := range s.AllPartitions() {
		t := s.Topics[tp.Topic]
		st, ok := t.States[tp.Partition]
		if !ok || s.Deleting[tp.Topic] {
			continue
		}
		pref := t.Replicas[tp.Partition][0]
		preferredCount[pref]++
		if st.Leader != pref {
			notLeading[pref] = append(notLeading[pref], tp)
		}
	}
	var out []TP
	for _, b := range sortedKeys(notLeading) {
		if !s.isLive(b) || len(notLeading[b])*100 <= percent*preferredCount[b] {
			continue
		}
		for _, tp := range notLeading[b] {
			if slices.Contains(s.Topics[tp.Topic].States[tp.Partition].ISR, b) {
				out = append(out, tp)
			}
		}
	}
	return out
}

// ElectLeaders serves the ElectLeaders API on the active controller.
func (c *Controller) ElectLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	tps := requestedTPs(req.Topics, func(rt kmsg.ElectLeadersRequestTopic) (string, []int32) { return rt.Topic, rt.Partitions })
	electionType := ElectPreferred
	if req.Version >= 1 {
		electionType = req.ElectionType
	}
	err := c.call(ctx, func(loopCtx context.Context, active bool) {
		results := map[TP]ElectionResult{}
		if !active {
			for _, tp := range tps {
				results[tp] = ElectionResult{kerr.NotController.Code, "This is not the correct controller for this cluster."}
			}
		} else {
			var acts Actions
			results, acts = c.state.OnElectLeaders(electionType, tps)
			if err := c.execute(loopCtx, acts); err != nil {
				c.failed(err)
				for tp := range results {
					results[tp] = ElectionResult{kerr.NotController.Code, err.Error()}
				}
			}
		}
		keys := make([]TP, 0, len(results))
		for tp := range results {
			keys = append(keys, tp)
		}
		sortTPs(keys)
		for _, tp := range keys {
			r := results[tp]
			if req.Version == 0 && r.ErrorCode == kerr.ElectionNotNeeded.Code {
				r = ElectionResult{} // v0 has no ELECTION_NOT_NEEDED
			}
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != tp.Topic {
				rt := kmsg.NewElectLeadersResponseTopic()
				rt.Topic = tp.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			p := kmsg.NewElectLeadersResponseTopicPartition()
			p.Partition, p.ErrorCode = tp.Partition, r.ErrorCode
			if r.ErrorCode != 0 {
				msg := r.ErrorMessage
				p.ErrorMessage = &msg
			}
			rt := &resp.Topics[len(resp.Topics)-1]
			rt.Partitions = append(rt.Partitions, p)
		}
	})
	if err != nil {
		return nil, err // f may still run later and write resp: never read it
	}
	return resp, nil
}

// rebalanceLeaders is one run of the automatic preferred leader election.
func (c *Controller) rebalanceLeaders(ctx context.Context) error {
	tps := c.state.ImbalancedPartitions(c.cfg.LeaderImbalancePerBrokerPercentage)
	if len(tps) == 0 {
		return nil
	}
	_, acts := c.state.OnElectLeaders(ElectPreferred, tps)
	c.log.Info("moving leadership back to preferred replicas", "partitions", len(tps))
	return c.execute(ctx, acts)
}
