package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller/store"
)

// Log dir failures, as Kafka's ZooKeeper mode handles them: a broker whose
// log dir fails writes a sequential /log_dir_event_notification/
// log_dir_event_<seq> node {"version":1,"broker":<id>,"event":1}; the
// controller reads and deletes the notifications and sends each named
// broker LeaderAndISR for all its replicas. The broker answers
// KAFKA_STORAGE_ERROR for the replicas in failed dirs, which the
// controller then counts offline (ClusterState.Offline): it elects new
// leaders where they led and removes them from ISRs. Any LeaderAndISR
// answer with KAFKA_STORAGE_ERROR does the same, which is how a controller
// elected later, or a broker restarted with a dir still failed, learns of
// them. A broker that registers again starts with no offline replica.

// LogDirEventPrefix names the sequential children of LogDirEventPath.
const LogDirEventPrefix = "log_dir_event_"

// logDirFailureEvent is the event code of a log dir failure (Kafka's
// LogDirEventNotificationHandler.LogDirFailureEvent).
const logDirFailureEvent = 1

type logDirEventJSON struct {
	Version int   `json:"version"`
	Broker  int32 `json:"broker"`
	Event   int   `json:"event"`
}

// NotifyLogDirFailure tells the controller that a log dir of broker
// failed, as Kafka's KafkaZkClient.propagateLogDirEvent does.
func NotifyLogDirFailure(ctx context.Context, st Store, broker int32) error {
	data, _ := json.Marshal(logDirEventJSON{Version: 1, Broker: broker, Event: logDirFailureEvent})
	if _, err := st.Create(ctx, LogDirEventPath+"/"+LogDirEventPrefix, data, store.Sequential); err != nil {
		return fmt.Errorf("notify log dir failure of broker %d: %w", broker, err)
	}
	return nil
}

// decodeLogDirEvent reads a notification; ok is false for one that is not
// a log dir failure.
func decodeLogDirEvent(data []byte) (broker int32, ok bool, err error) {
	var j logDirEventJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return 0, false, fmt.Errorf("decode log dir event %q: %w", data, err)
	}
	return j.Broker, j.Event == logDirFailureEvent, nil
}

// replicaOnline reports whether broker's replica of tp may lead or be in
// the ISR: the broker is live and the replica is not in a failed log dir
// (Kafka's ControllerContext.isReplicaOnline).
func (s *ClusterState) replicaOnline(broker int32, tp TP) bool {
	return s.isLive(broker) && !s.Offline[broker][tp]
}

// OnReplicasOffline records replicas broker reported in failed log dirs
// and moves leadership and ISR membership off them, as Kafka's
// onReplicasBecomeOffline: partitions they led get a new leader (or none),
// and they leave the ISR of the others.
func (s *ClusterState) OnReplicasOffline(broker int32, tps []TP) Actions {
	a := newActions()
	if !s.reachable(broker) {
		return a // gone: the broker change handles its replicas
	}
	sortTPs(tps)
	for _, tp := range tps {
		if s.Offline[broker][tp] {
			continue
		}
		if s.Offline[broker] == nil {
			s.Offline[broker] = map[TP]bool{}
		}
		s.Offline[broker][tp] = true
		t := s.Topics[tp.Topic]
		if t == nil || s.Deleting[tp.Topic] {
			continue
		}
		st, ok := t.States[tp.Partition]
		switch {
		case !ok:
		case st.Leader == broker:
			s.reelect(&a, tp, nil)
		case slices.Contains(st.ISR, broker) && len(st.ISR) > 1:
			isr := slices.DeleteFunc(slices.Clone(st.ISR), func(r int32) bool { return r == broker })
			s.changeState(&a, tp, PartitionState{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch + 1, ISR: isr, LeaderRecoveryState: st.LeaderRecoveryState})
		default:
			a.updateAll(s, tp) // the metadata lists it offline
		}
	}
	return a
}

// OnLogDirFailure asks the brokers that reported a failed log dir for the
// state of all their replicas, through LeaderAndISR; their answers name
// the replicas that are offline.
func (s *ClusterState) OnLogDirFailure(brokers []int32) Actions {
	a := newActions()
	for _, b := range brokers {
		if !s.reachable(b) {
			continue
		}
		for _, tp := range s.AllPartitions() {
			if hasState(s, tp) && !s.Deleting[tp.Topic] && slices.Contains(s.Topics[tp.Topic].Replicas[tp.Partition], b) {
				a.addLeaderAndISR(b, tp, false)
			}
		}
	}
	return a
}

// storageErrors lists the partitions a LeaderAndISR answer calls
// KAFKA_STORAGE_ERROR. From v5 the answer names topics by id only, which
// topicName resolves.
func storageErrors(resp kmsg.Response, topicName func([16]byte) (string, bool)) []TP {
	r, ok := resp.(*kmsg.LeaderAndISRResponse)
	if !ok {
		return nil
	}
	var out []TP
	add := func(topic string, p int32, code int16) {
		if code == kerr.KafkaStorageError.Code {
			out = append(out, TP{topic, p})
		}
	}
	for _, p := range r.Partitions { // v0-4
		add(p.Topic, p.Partition, p.ErrorCode)
	}
	for _, t := range r.Topics { // v5+
		name, ok := topicName(t.TopicID)
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			add(name, p.Partition, p.ErrorCode)
		}
	}
	return out
}

// processLogDirEvents handles the notifications present: it deletes them
// and asks the brokers they name for their replicas' state.
func (c *Controller) processLogDirEvents(ctx context.Context) error {
	names, err := c.watchNotifications(ctx, LogDirEventPath, LogDirEventPrefix, func(p *pendingEvents) { p.logDirEvents = true })
	if err != nil {
		return err
	}
	seen := map[int32]bool{}
	var brokers []int32
	for _, n := range names {
		path := LogDirEventPath + "/" + n
		data, _, err := c.st.Get(ctx, path)
		if errors.Is(err, store.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		broker, ok, derr := decodeLogDirEvent(data)
		if derr != nil {
			c.log.Warn("ignoring unreadable log dir event", "node", path, "err", derr)
		} else if ok && !seen[broker] {
			seen[broker] = true
			brokers = append(brokers, broker)
		}
		if err := c.deleteFenced(ctx, path); err != nil {
			return err
		}
	}
	if len(brokers) == 0 {
		return nil
	}
	c.log.Warn("log dir failure reported", "brokers", brokers)
	return c.execute(ctx, c.state.OnLogDirFailure(brokers))
}

// onLeaderAndISRAnswer posts the replicas a broker answered
// KAFKA_STORAGE_ERROR for, for the loop to take offline. ids maps the
// request's topic ids to names (the answer runs outside the loop, which
// owns the state).
func (c *Controller) onLeaderAndISRAnswer(broker int32, req *kmsg.LeaderAndISRRequest) func(kmsg.Response, error) {
	ids := map[[16]byte]string{}
	for _, ts := range req.TopicStates {
		ids[ts.TopicID] = ts.Topic
	}
	return func(resp kmsg.Response, err error) {
		if err != nil {
			return
		}
		tps := storageErrors(resp, func(id [16]byte) (string, bool) { name, ok := ids[id]; return name, ok })
		if len(tps) > 0 {
			c.post(func(p *pendingEvents) {
				if p.offlineReplicas == nil {
					p.offlineReplicas = map[int32][]TP{}
				}
				p.offlineReplicas[broker] = append(p.offlineReplicas[broker], tps...)
			})
		}
	}
}

// processOfflineReplicas takes reported replicas offline.
func (c *Controller) processOfflineReplicas(ctx context.Context, byBroker map[int32][]TP) error {
	for _, b := range sortedKeys(byBroker) {
		c.log.Warn("replicas offline in a failed log dir", "broker", b, "partitions", len(byBroker[b]))
		if err := c.execute(ctx, c.state.OnReplicasOffline(b, byBroker[b])); err != nil {
			return err
		}
	}
	return nil
}
