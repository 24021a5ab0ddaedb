package replica

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
)

// Listener hears of leadership changes, e.g. the group coordinator for
// __consumer_offsets partitions. Calls come without locks held.
type Listener interface {
	BecameLeader(p *Partition, leaderEpoch int32)
	Resigned(tp log.TopicPartition, leaderEpoch int32)
}

// Manager owns the Partition objects hosted on this broker.
type Manager struct {
	localID   int32
	logs      *log.Manager
	configFor func(topic string) log.Config
	listener  Listener
	logger    *slog.Logger

	mu         sync.RWMutex
	partitions map[log.TopicPartition]*Partition
}

// NewManager creates the manager. configFor gives a topic's log config.
func NewManager(localID int32, logs *log.Manager, configFor func(topic string) log.Config, listener Listener, logger *slog.Logger) *Manager {
	return &Manager{
		localID:    localID,
		logs:       logs,
		configFor:  configFor,
		listener:   listener,
		logger:     logger,
		partitions: make(map[log.TopicPartition]*Partition),
	}
}

// Get returns the hosted partition or nil.
func (m *Manager) Get(topic string, partition int32) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.partitions[log.TopicPartition{Topic: topic, Partition: partition}]
}

// All returns every hosted partition.
func (m *Manager) All() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.partitions))
	for _, p := range m.partitions {
		out = append(out, p)
	}
	return out
}

// UpdateConfig applies a topic's new log config to its hosted partitions.
func (m *Manager) UpdateConfig(topic string) {
	cfg := m.configFor(topic)
	for _, p := range m.All() {
		if p.tp.Topic == topic {
			p.log.SetConfig(cfg)
		}
	}
}

// ApplyLeaderAndISR applies the controller's decisions for the partitions
// in req that name this broker as a replica: it opens or creates their logs
// and sets leader, epoch and ISR. Older epochs are answered with
// STALE_CONTROLLER_EPOCH per partition, as Kafka does.
func (m *Manager) ApplyLeaderAndISR(req *kmsg.LeaderAndISRRequest) *kmsg.LeaderAndISRResponse {
	resp := kmsg.NewPtrLeaderAndISRResponse()
	resp.SetVersion(req.GetVersion())
	type event struct {
		p       *Partition
		leader  bool
		changed bool
		epoch   int32
	}
	var events []event
	for _, ts := range req.TopicStates {
		rt := kmsg.NewLeaderAndISRResponseTopic()
		rt.TopicID = ts.TopicID
		for _, ps := range ts.PartitionStates {
			rp := kmsg.NewLeaderAndISRResponseTopicPartition()
			rp.Topic, rp.Partition = ts.Topic, ps.Partition
			p, err := m.getOrCreate(ts.Topic, ps.Partition, ts.TopicID)
			if err != nil {
				m.logger.Error("open partition for LeaderAndISR", "topic", ts.Topic, "partition", ps.Partition, "err", err)
				rp.ErrorCode = kerr.KafkaStorageError.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			changed, applied := p.become(State{ps.Leader, ps.LeaderEpoch, ps.Replicas, ps.ISR})
			if !applied {
				rp.ErrorCode = kerr.StaleControllerEpoch.Code
			} else {
				p.maybeAdvanceHighWatermark()
				events = append(events, event{p, ps.Leader == m.localID, changed, ps.LeaderEpoch})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if m.listener != nil {
		for _, e := range events {
			switch {
			case e.leader:
				m.listener.BecameLeader(e.p, e.epoch)
			case e.changed:
				m.listener.Resigned(e.p.tp, e.epoch)
			}
		}
	}
	return resp
}

func (m *Manager) getOrCreate(topic string, partition int32, topicID [16]byte) (*Partition, error) {
	tp := log.TopicPartition{Topic: topic, Partition: partition}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.partitions[tp]; ok {
		return p, nil
	}
	l, err := m.logs.GetOrCreate(tp, topicID, m.configFor(topic))
	if err != nil {
		return nil, fmt.Errorf("log for %s-%d: %w", topic, partition, err)
	}
	p := &Partition{tp: tp, topicID: l.TopicID(), localID: m.localID, log: l, leader: -1, leaderEpoch: -1}
	m.partitions[tp] = p
	return p, nil
}

// ApplyStopReplica stops hosting the partitions in req, deleting their logs
// when asked to.
func (m *Manager) ApplyStopReplica(req *kmsg.StopReplicaRequest) *kmsg.StopReplicaResponse {
	resp := kmsg.NewPtrStopReplicaResponse()
	resp.SetVersion(req.GetVersion())
	for _, t := range req.Topics {
		for _, ps := range t.PartitionStates {
			rp := kmsg.NewStopReplicaResponsePartition()
			rp.Topic, rp.Partition = t.Topic, ps.Partition
			if err := m.stop(t.Topic, ps.Partition, ps.LeaderEpoch, ps.Delete); err != nil {
				m.logger.Error("stop replica", "topic", t.Topic, "partition", ps.Partition, "err", err)
				rp.ErrorCode = kerr.KafkaStorageError.Code
			}
			resp.Partitions = append(resp.Partitions, rp)
		}
	}
	return resp
}

func (m *Manager) stop(topic string, partition, leaderEpoch int32, del bool) error {
	tp := log.TopicPartition{Topic: topic, Partition: partition}
	m.mu.Lock()
	p, ok := m.partitions[tp]
	if ok && del {
		delete(m.partitions, tp)
	}
	m.mu.Unlock()
	if !ok {
		if del && m.logs.Get(tp) != nil {
			return m.logs.Delete(tp)
		}
		return nil
	}
	wasLeader := p.IsLeader()
	p.become(State{Leader: -1, LeaderEpoch: max(leaderEpoch, p.State().LeaderEpoch)})
	if wasLeader && m.listener != nil {
		m.listener.Resigned(tp, leaderEpoch)
	}
	if del {
		return m.logs.Delete(tp)
	}
	return nil
}
