package log

import "time"

// SetProducerIDExpiration changes producer.id.expiration.ms for the next
// expiry pass, as Kafka applies a dynamic update of it; d <= 0 is ignored
// (Kafka validates the value as at least 1).
func (m *Manager) SetProducerIDExpiration(d time.Duration) {
	if ms := d.Milliseconds(); ms > 0 {
		m.producerIDExpirationMs.Store(ms)
	}
}

// ProducerIDExpiration is the current producer.id.expiration.ms.
func (m *Manager) ProducerIDExpiration() time.Duration {
	return time.Duration(m.producerIDExpirationMs.Load()) * time.Millisecond
}

// expireProducers drops the idempotence state of producers idle for longer
// than producer.id.expiration.ms in every log and returns how many it
// dropped.
func (m *Manager) expireProducers() int {
	ms := m.producerIDExpirationMs.Load()
	n := 0
	for _, l := range m.list() {
		n += l.RemoveExpiredProducers(ms)
	}
	return n
}
