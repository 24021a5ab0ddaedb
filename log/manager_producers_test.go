package log

import (
	"path/filepath"
	"testing"
	"time"
)

// The Manager expires producers by its current producer.id.expiration.ms,
// which a dynamic broker config may change while it runs.
func TestManagerProducerIDExpiration(t *testing.T) {
	clock := newManualClock()
	m, err := OpenManager(ManagerConfig{Dirs: []string{filepath.Join(t.TempDir(), "d")}, BrokerID: 1, ClusterID: "c1",
		Now: clock.Now, ProducerIDExpiration: time.Hour}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.ProducerIDExpiration(); got != time.Hour {
		t.Fatalf("ProducerIDExpiration = %v, want the configured 1h", got)
	}
	l, err := m.GetOrCreate(TopicPartition{"t", 0}, [16]byte{1}, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now().UnixMilli()
	mustAppend(t, l, buildBatch(batchSpec{baseTimestamp: now - 60_000, producerID: 1, producerEpoch: 0, baseSequence: 0}, nRecords(1, 1)), 0)
	if n := m.expireProducers(); n != 0 {
		t.Fatalf("expired %d producers idle 1m with a 1h expiration", n)
	}
	m.SetProducerIDExpiration(30 * time.Second)
	if n := m.expireProducers(); n != 1 {
		t.Fatalf("expired %d producers idle 1m with a 30s expiration, want 1", n)
	}
}
