package replica

import "sync/atomic"

// isrStats counts the ISR changes the controller accepted for partitions
// this broker leads, as Kafka's ReplicaManager marks IsrShrinksPerSec and
// IsrExpandsPerSec when an AlterPartition succeeds.
type isrStats struct {
	shrinks, expands atomic.Uint64
}

// accepted counts an accepted change from an ISR of size from to one of size to.
func (s *isrStats) accepted(from, to int) {
	switch {
	case s == nil:
	case to < from:
		s.shrinks.Add(1)
	case to > from:
		s.expands.Add(1)
	}
}

// ISRChanges returns the ISR shrinks and expands accepted so far.
func (m *Manager) ISRChanges() (shrinks, expands uint64) {
	return m.isrStats.shrinks.Load(), m.isrStats.expands.Load()
}

// AppendPartitions appends every hosted partition to buf, so that a caller
// visiting them often (a metrics scrape) reuses one slice.
func (m *Manager) AppendPartitions(buf []*Partition) []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, p := range m.partitions {
		buf = append(buf, p)
	}
	return buf
}

// ReplicaCounts reports whether this broker leads the partition and the
// sizes of its replica set and ISR, without copying them.
func (p *Partition) ReplicaCounts() (leader bool, replicas, isr int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader == p.localID, len(p.replicas), len(p.isr)
}
