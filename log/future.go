package log

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Moving a replica between log dirs (AlterReplicaLogDirs), as Kafka does:
// a future log is created in the destination dir as
// <topic>-<partition>.<uuid>-future and filled from the current log by a
// copier goroutine, following the current log's appends, truncations and
// log start offset. Once it has caught up, appends to the current log are
// held while the rest is copied, the current directory is renamed to
// <topic>-<partition>.<uuid>-delete (removed after file.delete.delay.ms),
// the future one to <topic>-<partition>, and the Log takes the moved
// files over in place: callers keep the same *Log. A future dir found at
// start-up is removed (Kafka resumes the move; here it is asked again).

// ErrLogDirNotFound is LOG_DIR_NOT_FOUND (57): not one of log.dirs.
var ErrLogDirNotFound = errors.New("log: not a configured log dir")

// ErrNoReplica is REPLICA_NOT_AVAILABLE (9) for a move: this broker has no
// log of the partition yet. The dir is remembered for when it creates one.
var ErrNoReplica = errors.New("log: no local replica")

const futureSuffix = "-future"

// futureMove is one replica being moved.
type futureMove struct {
	dir  string // destination log dir
	log  *Log   // the future log
	stop chan struct{}
	done chan struct{}
}

// copyChunk is how much one copy step reads from the current log.
const copyChunk = 1 << 20

// MoveReplica starts moving tp's log to dir (a log dir of this broker);
// moving it where it already is cancels a move in progress. A partition
// without a log gets ErrNoReplica, and dir becomes its preferred dir.
func (m *Manager) MoveReplica(tp TopicPartition, dir string) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if !slices.Contains(m.cfg.Dirs, dir) {
		return fmt.Errorf("%w: %s", ErrLogDirNotFound, dir)
	}
	if m.offlineDirs[dir] {
		return fmt.Errorf("%w: %s", ErrLogDirOffline, dir)
	}
	if d, ok := m.offline[tp]; ok {
		return errOffline(tp, d)
	}
	cur := m.logs[tp]
	if cur == nil {
		m.preferred[tp] = dir
		return fmt.Errorf("%w: %s", ErrNoReplica, tp)
	}
	if mv := m.moves[tp]; mv != nil {
		if mv.dir == dir {
			return nil
		}
		m.cancelMoveLocked(tp)
	}
	if filepath.Dir(cur.Dir()) == dir {
		return nil
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return fmt.Errorf("move %s: %w", tp, err)
	}
	path := filepath.Join(dir, tp.dirName()+"."+hex.EncodeToString(id[:])+futureSuffix)
	fut, err := Open(path, cur.Config(), Options{FS: m.cfg.FS, Files: m.files, Now: m.cfg.Now, Logger: m.logger.With("future", true), Codecs: m.cfg.Codecs, TopicID: cur.TopicID(), OnIOError: m.dirFailer(dir)})
	if err != nil {
		if isIOError(err) {
			go m.FailDir(dir, err)
		}
		return fmt.Errorf("create future log of %s in %s: %w", tp, dir, err)
	}
	mv := &futureMove{dir: dir, log: fut, stop: make(chan struct{}), done: make(chan struct{})}
	m.moves[tp] = mv
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		defer close(mv.done)
		m.runMove(tp, mv)
	}()
	m.logger.Info("moving replica", "partition", tp, "from", filepath.Dir(cur.Dir()), "to", dir)
	return nil
}

// Future returns the log a move of tp is filling, if any.
func (m *Manager) Future(tp TopicPartition) (*Log, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mv := m.moves[tp]; mv != nil {
		return mv.log, true
	}
	return nil, false
}

// Futures lists the partitions being moved with their future logs.
func (m *Manager) Futures() map[TopicPartition]*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]*Log, len(m.moves))
	for tp, mv := range m.moves {
		out[tp] = mv.log
	}
	return out
}

// cancelMoveLocked stops a move and removes its future log.
func (m *Manager) cancelMoveLocked(tp TopicPartition) {
	mv := m.moves[tp]
	if mv == nil {
		return
	}
	delete(m.moves, tp)
	close(mv.stop)
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		<-mv.done
		mv.log.markClosed()
		_ = mv.log.release()
		m.logError("remove cancelled future log", m.cfg.FS.RemoveAll(mv.log.Dir()))
	}()
}

// runMove copies tp's current log into the future one until it has
// caught up, then swaps them.
func (m *Manager) runMove(tp TopicPartition, mv *futureMove) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-mv.stop:
			return
		default:
		}
		cur := m.Get(tp)
		if cur == nil {
			// Deleted or offline: the move ends with it.
			m.mu.Lock()
			if m.moves[tp] == mv {
				m.cancelMoveLocked(tp)
			}
			m.mu.Unlock()
			return
		}
		copied, err := copyInto(cur, mv.log)
		if err == nil && !copied {
			err = m.swapFuture(tp, cur, mv)
			if err == nil {
				return
			}
		}
		if err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Warn("replica move step failed; retrying", "partition", tp, "err", err)
		}
		if !copied || err != nil {
			select {
			case <-mv.stop:
				return
			case <-tick.C:
			}
		}
	}
}

// copyInto brings fut one step closer to cur: it follows cur's log start
// offset and truncations, and copies up to copyChunk of cur's batches past
// fut's end. copied is false when fut already had everything.
func copyInto(cur, fut *Log) (copied bool, err error) {
	start, leo := cur.LogStartOffset(), cur.LogEndOffset()
	fleo := fut.LogEndOffset()
	switch {
	case start > fleo:
		return true, fut.TruncateFullyAndStartAt(start)
	case leo < fleo:
		return true, fut.TruncateTo(leo)
	}
	fut.SetHighWatermark(cur.HighWatermark())
	if start > fut.LogStartOffset() && start <= fut.HighWatermark() {
		if _, err := fut.DeleteRecordsBefore(start); err != nil {
			return false, err
		}
	}
	if fleo == leo {
		return false, nil
	}
	s, err := cur.Read(fleo, copyChunk, leo, true)
	if err != nil {
		return false, fmt.Errorf("read %s at %d: %w", cur.tp, fleo, err)
	}
	data, err := s.ReadInto(nil)
	if err != nil {
		return false, fmt.Errorf("read %s at %d: %w", cur.tp, fleo, err)
	}
	if len(data) == 0 {
		return false, nil
	}
	if _, err := fut.AppendAsFollower(data); err != nil {
		return false, fmt.Errorf("append to future log of %s: %w", cur.tp, err)
	}
	fut.SetHighWatermark(cur.HighWatermark())
	return true, nil
}

// swapFuture makes the future log the current one, holding cur's appends
// from the last copy to the swap so that nothing lands in between.
func (m *Manager) swapFuture(tp TopicPartition, cur *Log, mv *futureMove) error {
	cur.appendMu.Lock()
	defer cur.appendMu.Unlock()
	if cur.isClosed() {
		return ErrClosed
	}
	fut := mv.log
	for {
		copied, err := copyInto(cur, fut)
		if err != nil {
			return err
		}
		if !copied {
			break
		}
	}
	m.mu.Lock()
	if m.moves[tp] != mv {
		m.mu.Unlock()
		return ErrClosed // cancelled meanwhile
	}
	delete(m.moves, tp)
	m.mu.Unlock()
	futPath := fut.Dir()
	if err := fut.Close(); err != nil {
		return m.abandonMove(mv, fmt.Errorf("close future log of %s: %w", tp, err))
	}
	oldPath := cur.Dir()
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return m.abandonMove(mv, err)
	}
	deleted := filepath.Join(filepath.Dir(oldPath), tp.dirName()+"."+hex.EncodeToString(id[:])+"-delete")
	final := filepath.Join(mv.dir, tp.dirName())
	if err := cur.renameDir(oldPath, deleted); err != nil {
		return m.abandonMove(mv, fmt.Errorf("move %s: %w", tp, err))
	}
	if err := m.cfg.FS.Rename(futPath, final); err != nil {
		// Put the current log back; the copy is lost.
		err = errors.Join(err, cur.renameDir(deleted, oldPath))
		return m.abandonMove(mv, fmt.Errorf("move %s: %w", tp, err))
	}
	errs := errors.Join(m.cfg.FS.SyncDir(filepath.Dir(oldPath)), m.cfg.FS.SyncDir(mv.dir))
	moved, err := Open(final, cur.Config(), Options{
		FS: m.cfg.FS, Files: m.files, Now: m.cfg.Now, Logger: m.logger, Codecs: m.cfg.Codecs, TopicID: cur.TopicID(), OnIOError: m.dirFailer(mv.dir),
		CleanShutdown: true, HighWatermark: cur.HighWatermark(), LogStartOffset: cur.LogStartOffset(), RecoveryPoint: fut.LogEndOffset(),
	})
	if err != nil {
		// The data is in final, the old copy in deleted; a restart finds
		// final. Until then the current log keeps its open files.
		return errors.Join(errs, fmt.Errorf("open moved log of %s: %w", tp, err))
	}
	old := cur.adopt(moved)
	due := m.cfg.Now().Add(time.Duration(cur.Config().FileDeleteDelayMs) * time.Millisecond)
	m.mu.Lock()
	m.deleting = append(m.deleting, dirDelete{log: old, path: deleted, due: due})
	m.mu.Unlock()
	m.logger.Info("moved replica", "partition", tp, "to", mv.dir)
	if errs != nil {
		m.logger.Warn("sync log dirs after a move", "partition", tp, "err", errs)
	}
	return nil
}

// abandonMove removes a future log whose swap failed.
func (m *Manager) abandonMove(mv *futureMove, err error) error {
	mv.log.markClosed()
	_ = mv.log.release()
	_ = m.cfg.FS.RemoveAll(mv.log.Dir())
	m.logger.Error("replica move failed", "err", err)
	return nil
}

// adopt takes over moved's files, in place of its own: the caller holds
// appendMu and moved is a freshly opened log nobody else uses. It returns
// a holder of the old files, to release when no reader needs them.
func (l *Log) adopt(moved *Log) *Log {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	old := &Log{segments: l.segments, pending: l.pending}
	l.dir, l.onIOError = moved.dir, moved.onIOError
	l.segments, l.pending = moved.segments, nil
	l.logEndOffset, l.logStartOffset = moved.logEndOffset, moved.logStartOffset
	l.highWatermark, l.recoveryPoint = moved.highWatermark, moved.recoveryPoint
	l.epochs, l.unstable, l.producers = moved.epochs, moved.unstable, moved.producers
	l.lastFlush = moved.lastFlush
	return old
}

// isClosed reports whether Close or a deletion stopped the log.
func (l *Log) isClosed() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.closed
}

// isFutureDir reports whether a log dir entry is a future log.
func isFutureDir(name string) bool { return strings.HasSuffix(name, futureSuffix) }
