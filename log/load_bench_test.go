package log

import (
	"flag"
	"path/filepath"
	"testing"
)

// loadLogs sizes BenchmarkLoadIdleLogs and BenchmarkCloseIdleLogs.
var loadLogs = flag.Int("load-logs", 5000, "partitions BenchmarkLoadIdleLogs and BenchmarkCloseIdleLogs open")

// BenchmarkLoadIdleLogs measures a broker's start after kill -9 with many
// idle partitions (each an empty log with one leader epoch), as a broker
// rejoining a cluster of tens of thousands of partitions does: each
// iteration opens -load-logs logs through OpenManager with 8 recovery
// threads, then drops them without a clean shutdown.
func BenchmarkLoadIdleLogs(b *testing.B) {
	m, reopen := idleLogs(b, func(l *Log) error { return l.AssignEpochStartOffset(1, 0) })
	crashManager(m)
	b.ResetTimer()
	for range b.N {
		m := reopen()
		b.StopTimer()
		crashManager(m)
		b.StartTimer()
	}
}

// crashManager drops m's logs as kill -9 would: no checkpoints, no clean
// shutdown marker; only the descriptors and the dir lock are released.
func crashManager(m *Manager) {
	for _, l := range m.All() {
		crash(l)
	}
	for _, lk := range m.locks {
		lk.Close()
	}
}

// BenchmarkCloseIdleLogs measures a broker's clean shutdown with many idle
// partitions: each iteration opens -load-logs logs of one small batch each
// through OpenManager after a clean shutdown, then closes them cleanly
// (timed), with 8 recovery threads as BenchmarkLoadIdleLogs.
func BenchmarkCloseIdleLogs(b *testing.B) {
	m, reopen := idleLogs(b, func(l *Log) error {
		_, err := l.Append(buildBatch(plainSpec(1), nRecords(1, 10)), 0)
		return err
	})
	if err := m.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		m := reopen()
		b.StartTimer()
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// idleLogs creates -load-logs logs in a new manager with 8 recovery
// threads, each given fill, and returns the manager and how to open its
// dir again (checking that every log loads).
func idleLogs(b *testing.B, fill func(*Log) error) (*Manager, func() *Manager) {
	cfg := ManagerConfig{Dirs: []string{filepath.Join(b.TempDir(), "data")}, BrokerID: 1, RecoveryThreads: 8}
	configFor := func(TopicPartition) Config { return benchConfig() }
	m, err := OpenManager(cfg, configFor)
	if err != nil {
		b.Fatal(err)
	}
	for i := range *loadLogs {
		l, err := m.GetOrCreate(TopicPartition{Topic: "idle", Partition: int32(i)}, [16]byte{1}, benchConfig())
		if err != nil {
			b.Fatal(err)
		}
		if err := fill(l); err != nil {
			b.Fatal(err)
		}
	}
	return m, func() *Manager {
		m, err := OpenManager(cfg, configFor)
		if err != nil {
			b.Fatal(err)
		}
		if got := len(m.All()); got != *loadLogs {
			b.Fatalf("loaded %d logs, want %d", got, *loadLogs)
		}
		return m
	}
}
