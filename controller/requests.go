package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Versions of the control requests the controller sends: the newest kmsg
// knows, as a Kafka 3.4+ ZooKeeper-mode controller sends.
const (
	LeaderAndISRVersion   int16 = 7
	UpdateMetadataVersion int16 = 8
	StopReplicaVersion    int16 = 4
)

// SecurityProtocolID maps a security protocol name to Kafka's id.
func SecurityProtocolID(name string) int16 {
	switch name {
	case "PLAINTEXT":
		return 0
	case "SSL":
		return 1
	case "SASL_PLAINTEXT":
		return 2
	case "SASL_SSL":
		return 3
	}
	return -1
}

// endpointFor picks the broker's endpoint on listener, else its first.
func endpointFor(b BrokerInfo, listener string) (Endpoint, bool) {
	for _, e := range b.Endpoints {
		if e.Name == listener {
			return e, true
		}
	}
	if len(b.Endpoints) > 0 {
		return b.Endpoints[0], true
	}
	return Endpoint{}, false
}

func groupByTopic(tps []TP) (topics []string, parts map[string][]int32) {
	parts = map[string][]int32{}
	for _, tp := range tps {
		if _, ok := parts[tp.Topic]; !ok {
			topics = append(topics, tp.Topic)
		}
		parts[tp.Topic] = append(parts[tp.Topic], tp.Partition)
	}
	slices.Sort(topics)
	for _, t := range topics {
		slices.Sort(parts[t])
	}
	return topics, parts
}

// requestedTPs flattens the topics of a request that names partitions
// (ElectLeaders, ListPartitionReassignments); nil topics, meaning every
// partition, stay nil.
func requestedTPs[T any](topics []T, named func(T) (string, []int32)) []TP {
	if topics == nil {
		return nil
	}
	tps := []TP{}
	for _, rt := range topics {
		topic, parts := named(rt)
		for _, p := range parts {
			tps = append(tps, TP{topic, p})
		}
	}
	return tps
}

func keys(m map[TP]bool) []TP {
	out := make([]TP, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sortTPs(out)
	return out
}

// BuildLeaderAndISR builds the LeaderAndISR request for broker with the
// current state of the given partitions (value: the partition is new).
func BuildLeaderAndISR(s *ClusterState, broker int32, tps map[TP]bool, interBrokerListener string) *kmsg.LeaderAndISRRequest {
	req := kmsg.NewPtrLeaderAndISRRequest()
	req.Version = LeaderAndISRVersion
	req.ControllerID = s.ControllerID
	req.ControllerEpoch = s.Epoch
	req.BrokerEpoch = s.Live[broker].Epoch
	leaders := map[int32]bool{}
	topics, parts := groupByTopic(keys(tps))
	for _, name := range topics {
		t := s.Topics[name]
		ts := kmsg.NewLeaderAndISRRequestTopicState()
		ts.Topic, ts.TopicID = name, t.ID
		for _, p := range parts[name] {
			st := t.States[p]
			ps := kmsg.NewLeaderAndISRRequestTopicPartition()
			ps.Topic, ps.Partition = name, p
			ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = st.ControllerEpoch, st.Leader, st.LeaderEpoch
			ps.ISR, ps.ZKVersion = slices.Clone(st.ISR), st.ZkVersion
			ps.Replicas = slices.Clone(t.Replicas[p])
			ps.AddingReplicas, ps.RemovingReplicas = slices.Clone(t.Adding[p]), slices.Clone(t.Removing[p])
			ps.IsNew = tps[TP{name, p}]
			ps.LeaderRecoveryState = st.LeaderRecoveryState
			ts.PartitionStates = append(ts.PartitionStates, ps)
			if st.Leader >= 0 {
				leaders[st.Leader] = true
			}
		}
		req.TopicStates = append(req.TopicStates, ts)
	}
	ids := make([]int32, 0, len(leaders))
	for id := range leaders {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b, ok := s.Live[id]
		if !ok {
			continue
		}
		e, ok := endpointFor(b, interBrokerListener)
		if !ok {
			continue
		}
		l := kmsg.NewLeaderAndISRRequestLiveLeader()
		l.BrokerID, l.Host, l.Port = id, e.Host, e.Port
		req.LiveLeaders = append(req.LiveLeaders, l)
	}
	return req
}

// StateFromUpdateMetadata is the partition state an UpdateMetadata entry
// carries, as BuildUpdateMetadata filled it in, for a broker's cache to
// hand its controller (Config.CachedStates). It carries neither the leader
// recovery state nor the znode's mzxid (seed.go). The ISR is a copy.
func StateFromUpdateMetadata(ps kmsg.UpdateMetadataRequestTopicPartition) PartitionState {
	return PartitionState{Leader: ps.Leader, LeaderEpoch: ps.LeaderEpoch, ISR: slices.Clone(ps.ISR),
		ControllerEpoch: ps.ControllerEpoch, ZkVersion: ps.ZKVersion}
}

// BuildUpdateMetadata builds the UpdateMetadata request for broker with the
// live brokers and the given partitions. Partitions of topics being deleted
// carry leader -2 (LeaderDuringDelete), which tells brokers to drop them.
func BuildUpdateMetadata(s *ClusterState, broker int32, tps map[TP]bool) *kmsg.UpdateMetadataRequest {
	req := kmsg.NewPtrUpdateMetadataRequest()
	req.Version = UpdateMetadataVersion
	req.ControllerID = s.ControllerID
	req.ControllerEpoch = s.Epoch
	req.BrokerEpoch = s.Live[broker].Epoch
	topics, parts := groupByTopic(keys(tps))
	for _, name := range topics {
		t := s.Topics[name]
		if t == nil {
			continue
		}
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic, ts.TopicID = name, t.ID
		for _, p := range parts[name] {
			st, ok := t.States[p]
			if !ok && !s.Deleting[name] {
				continue
			}
			ps := kmsg.NewUpdateMetadataRequestTopicPartition()
			ps.Topic, ps.Partition = name, p
			ps.ControllerEpoch, ps.Leader, ps.LeaderEpoch = st.ControllerEpoch, st.Leader, st.LeaderEpoch
			ps.ISR, ps.ZKVersion = slices.Clone(st.ISR), st.ZkVersion
			ps.Replicas = slices.Clone(t.Replicas[p])
			for _, r := range t.Replicas[p] {
				if !s.reachable(r) || s.Offline[r][TP{name, p}] {
					ps.OfflineReplicas = append(ps.OfflineReplicas, r)
				}
			}
			if s.Deleting[name] {
				ps.Leader = LeaderDuringDelete
			}
			ts.PartitionStates = append(ts.PartitionStates, ps)
		}
		if len(ts.PartitionStates) > 0 {
			req.TopicStates = append(req.TopicStates, ts)
		}
	}
	ids := make([]int32, 0, len(s.Live))
	for id := range s.Live {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b := s.Live[id]
		lb := kmsg.NewUpdateMetadataRequestLiveBroker()
		lb.ID = id
		for _, e := range b.Endpoints {
			ep := kmsg.NewUpdateMetadataRequestLiveBrokerEndpoint()
			ep.Port, ep.Host, ep.ListenerName, ep.SecurityProtocol = e.Port, e.Host, e.Name, SecurityProtocolID(e.SecurityProtocol)
			lb.Endpoints = append(lb.Endpoints, ep)
		}
		if b.Rack != "" {
			r := b.Rack
			lb.Rack = &r
		}
		req.LiveBrokers = append(req.LiveBrokers, lb)
	}
	return req
}

// BuildStopReplica builds a StopReplica request that deletes the
// partitions of topics being deleted.
func BuildStopReplica(s *ClusterState, broker int32, tps []TP) *kmsg.StopReplicaRequest {
	return buildStopReplica(s, broker, tps, func(TP) int32 { return EpochDuringDelete })
}

// BuildRemoveReplicas builds the StopReplica (delete) that Kafka sends a
// replica removed by a reassignment, at the partition's leader epoch.
func BuildRemoveReplicas(s *ClusterState, broker int32, tps []TP) *kmsg.StopReplicaRequest {
	return buildStopReplica(s, broker, tps, func(tp TP) int32 {
		if t := s.Topics[tp.Topic]; t != nil {
			if st, ok := t.States[tp.Partition]; ok {
				return st.LeaderEpoch
			}
		}
		return -1
	})
}

func buildStopReplica(s *ClusterState, broker int32, tps []TP, epochOf func(TP) int32) *kmsg.StopReplicaRequest {
	req := kmsg.NewPtrStopReplicaRequest()
	req.Version = StopReplicaVersion
	req.ControllerID = s.ControllerID
	req.ControllerEpoch = s.Epoch
	req.BrokerEpoch = s.Live[broker].Epoch
	topics, parts := groupByTopic(tps)
	for _, name := range topics {
		t := kmsg.NewStopReplicaRequestTopic()
		t.Topic = name
		for _, p := range parts[name] {
			ps := kmsg.NewStopReplicaRequestTopicPartitionState()
			ps.Partition, ps.LeaderEpoch, ps.Delete = p, epochOf(TP{name, p}), true
			t.PartitionStates = append(t.PartitionStates, ps)
		}
		req.Topics = append(req.Topics, t)
	}
	return req
}
