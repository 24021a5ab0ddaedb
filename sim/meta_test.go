package sim

import (
	"testing"

	"github.com/brook-mq/brook/log"
)

// TestStoredBrokerIDOnSimDisk: the broker id a log manager records in
// meta.properties is read back through the same file system seam, here
// the simulated disk, where the operating system's files have nothing;
// it survives a crash of the process that wrote it.
func TestStoredBrokerIDOnSimDisk(t *testing.T) {
	disk, now := testFS(t)
	dirs := []string{"/logs/a", "/logs/b"}
	if _, found, err := log.StoredBrokerID(disk.Mount(), dirs); found || err != nil {
		t.Fatalf("empty disk: found %v, %v", found, err)
	}
	m, err := log.OpenManager(log.ManagerConfig{Dirs: dirs, BrokerID: 1007, ClusterID: "sim", Now: now, FS: disk.Mount()},
		func(log.TopicPartition) log.Config { return log.DefaultConfig() })
	if err != nil {
		t.Fatal(err)
	}
	disk.Crash(false) // the manager's handles die with the process
	_ = m
	id, found, err := log.StoredBrokerID(disk.Mount(), dirs)
	if !found || id != 1007 || err != nil {
		t.Fatalf("after a crash: id %d, found %v, %v", id, found, err)
	}
}
