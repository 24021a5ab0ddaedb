package log

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// Several log dirs (JBOD): a log dir that fails takes only its partitions
// offline, as Kafka's LogDirFailureChannel and LogManager.handleLogDirFailure
// do. An I/O error writing a log (append, roll, flush) or a dir's checkpoint
// files marks the dir offline: its logs are dropped without flushing (their
// files are closed, nothing more is written there), later calls for its
// partitions get ErrLogDirOffline, and ManagerConfig.OnDirFailure is told
// once, so that the broker can take the replicas offline and notify the
// controller. The dir stays offline until the broker restarts.

// ErrLogDirOffline is Kafka's KafkaStorageException: the partition's log
// dir failed (KAFKA_STORAGE_ERROR, 56).
var ErrLogDirOffline = errors.New("log: log dir offline")

// isIOError reports whether err comes from the file system (a failed
// open, write, sync or rename), as opposed to a rejected record or a
// closed log: only those take a log dir offline.
func isIOError(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &errno)
}

// ioFailed reports an error met writing this log to the Manager, which
// takes the log's dir offline if it is an I/O error. The failure runs in a
// goroutine: the caller holds the log's locks, which closing it needs.
func (l *Log) ioFailed(err error) {
	if err == nil || !isIOError(err) {
		return
	}
	l.mu.RLock()
	f := l.onIOError
	l.mu.RUnlock()
	if f != nil {
		go f(err)
	}
}

// FailDir takes a log dir offline after cause, an I/O error in it: its
// logs are closed without writing and dropped, and OnDirFailure is called
// with the partitions that were there. A dir already offline, or not one
// of log.dirs, is left alone. It reports whether the dir went offline now.
func (m *Manager) FailDir(dir string, cause error) bool {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	if !slices.Contains(m.cfg.Dirs, dir) || m.offlineDirs[dir] {
		m.mu.Unlock()
		return false
	}
	m.offlineDirs[dir] = true
	var tps []TopicPartition
	var logs []*Log
	for tp, l := range m.logs {
		if filepath.Dir(l.Dir()) == dir {
			tps = append(tps, tp)
			logs = append(logs, l)
			delete(m.logs, tp)
			m.offline[tp] = dir
		}
	}
	for tp, mv := range m.moves {
		if mv.dir == dir || m.offline[tp] != "" {
			m.cancelMoveLocked(tp)
		}
	}
	m.mu.Unlock()
	m.logger.Error("log dir failed; its partitions are offline", "dir", dir, "partitions", len(tps), "err", cause)
	for _, l := range logs {
		l.markClosed()
		_ = l.release()
	}
	if m.cfg.OnDirFailure != nil {
		m.cfg.OnDirFailure(dir, tps)
	}
	return true
}

// IsOffline reports whether tp's log was in a log dir that failed.
func (m *Manager) IsOffline(tp TopicPartition) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.offline[tp]
	return ok
}

// OfflineDirs lists the log dirs that failed, in log.dirs order.
func (m *Manager) OfflineDirs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, d := range m.cfg.Dirs {
		if m.offlineDirs[d] {
			out = append(out, d)
		}
	}
	return out
}

// IsDirOnline reports whether dir is one of log.dirs and has not failed.
func (m *Manager) IsDirOnline(dir string) bool {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.cfg.Dirs, dir) && !m.offlineDirs[dir]
}

// onlineDirsLocked lists the dirs that can take new partitions.
func (m *Manager) onlineDirsLocked() []string {
	var out []string
	for _, d := range m.cfg.Dirs {
		if !m.offlineDirs[d] {
			out = append(out, d)
		}
	}
	return out
}

// errOffline is the error for a partition whose dir failed.
func errOffline(tp TopicPartition, dir string) error {
	return fmt.Errorf("%w: %s was in %s", ErrLogDirOffline, tp, dir)
}
