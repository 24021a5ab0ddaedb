package replica

import (
	"fmt"

	"github.com/brook-mq/brook/log"
)

// MarkOffline stops hosting partitions whose log dir failed (Kafka's
// ReplicaManager.handleLogDirFailure): they stop fetching, their waiters
// wake to find no leadership, a lost leadership is reported to the
// listener, and the manager forgets them, so the broker answers
// KAFKA_STORAGE_ERROR for them and LeaderAndISR cannot bring them back
// (the log manager refuses their logs) until the broker restarts.
func (m *Manager) MarkOffline(tps []log.TopicPartition) {
	for _, tp := range tps {
		m.mu.Lock()
		p, ok := m.partitions[tp]
		delete(m.partitions, tp)
		m.mu.Unlock()
		if !ok {
			continue
		}
		m.removeFetch(tp)
		wasLeader := p.IsLeader()
		cur := p.State()
		p.become(State{Leader: -1, LeaderEpoch: cur.LeaderEpoch, ZKVersion: cur.ZKVersion})
		if wasLeader && m.listener != nil {
			m.listener.Resigned(tp, cur.LeaderEpoch)
		}
		m.logger.Warn("replica offline: its log dir failed", "partition", tp)
	}
}

// errNoLogWithOfflineDirs refuses to create, for a partition the
// controller does not call new, a log that may exist in a failed dir, as
// Kafka's LogManager.getOrCreateLog does: an empty replica would look
// caught up while its data sits on the failed disk.
func (m *Manager) errNoLogWithOfflineDirs(tp log.TopicPartition, isNew bool) error {
	if isNew || m.logs.Get(tp) != nil {
		return nil
	}
	if off := m.logs.OfflineDirs(); len(off) > 0 {
		return fmt.Errorf("%w: cannot create the log of %s while log dirs %v are offline", log.ErrLogDirOffline, tp, off)
	}
	return nil
}
