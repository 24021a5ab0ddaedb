package log

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"time"
)

// Run does the background work until ctx is done: retention every
// RetentionCheckInterval, flush.ms checks every FlushCheckInterval, removal
// of deleted segments and partitions every DeleteCheckInterval; recovery
// point, log start offset and high watermark checkpoints, and producer id
// expiry, at their intervals. With log.cleaner.enable the cleaner threads
// compact the logs whose cleanup.policy contains compact.
func (m *Manager) Run(ctx context.Context) {
	cleanerDone := make(chan struct{})
	go func() {
		defer close(cleanerDone)
		m.runCleaner(ctx)
	}()
	defer func() { <-cleanerDone }()
	tick := func(d time.Duration) *time.Ticker { return time.NewTicker(d) }
	retention := tick(m.cfg.RetentionCheckInterval)
	flush := tick(m.cfg.FlushCheckInterval)
	recovery := tick(m.cfg.FlushOffsetCheckpointInterval)
	start := tick(m.cfg.FlushStartOffsetCheckpointInterval)
	hw := tick(m.cfg.HighWatermarkCheckpointInterval)
	producers := tick(m.cfg.ProducerIDExpirationCheckInterval)
	deletions := tick(m.cfg.DeleteCheckInterval)
	defer func() {
		for _, t := range []*time.Ticker{retention, flush, recovery, start, hw, producers, deletions} {
			t.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-retention.C:
			m.runRetention()
		case <-flush.C:
			m.runFlush()
		case <-deletions.C:
			m.runDeletions()
		case <-recovery.C:
			m.logError("recovery point checkpoint", m.writeCheckpoint(recoveryPointCheckpointFile, (*Log).RecoveryPoint))
		case <-start.C:
			m.logError("log start offset checkpoint", m.writeCheckpoint(logStartCheckpointFile, (*Log).LogStartOffset))
		case <-hw.C:
			m.logError("high watermark checkpoint", m.writeCheckpoint(highWatermarkCheckpointFile, (*Log).HighWatermark))
		case <-producers.C:
			m.expireProducers()
		}
	}
}

func (m *Manager) logError(what string, err error) {
	if err != nil && !errors.Is(err, ErrClosed) {
		m.logger.Error(what, "err", err)
	}
}

func (m *Manager) runRetention() {
	for _, l := range m.list() {
		if _, err := l.DeleteOldSegments(); err != nil && !errors.Is(err, ErrClosed) {
			m.logger.Error("retention", "partition", l.tp.String(), "err", err)
		}
	}
}

func (m *Manager) runFlush() {
	for _, l := range m.list() {
		if err := l.flushIfDue(); err != nil {
			m.logger.Error("flush", "partition", l.tp.String(), "err", err)
		}
	}
}

// runDeletions removes segments and partition directories whose
// file.delete.delay.ms has passed.
func (m *Manager) runDeletions() {
	for _, l := range m.list() {
		if err := l.deleteExpiredSegments(); err != nil {
			m.logger.Error("remove deleted segments", "partition", l.tp.String(), "err", err)
		}
	}
	now := m.cfg.Now()
	m.mu.Lock()
	var due []dirDelete
	kept := m.deleting[:0]
	for _, d := range m.deleting {
		if !now.Before(d.due) {
			due = append(due, d)
		} else {
			kept = append(kept, d)
		}
	}
	m.deleting = kept
	m.mu.Unlock()
	for _, d := range due {
		m.logError("close deleted partition", d.log.release())
		m.logError("remove deleted partition", m.cfg.FS.RemoveAll(d.path))
	}
}

// writeCheckpoint writes one checkpoint file per log dir with get(log) for
// each partition in it.
func (m *Manager) writeCheckpoint(file string, get func(*Log) int64) error {
	return m.writeCheckpointIf(file, func(l *Log) (int64, bool) { return get(l), true })
}

// writeCheckpointIf is writeCheckpoint for the partitions where get
// reports true.
func (m *Manager) writeCheckpointIf(file string, get func(*Log) (int64, bool)) error {
	m.cpMu.Lock()
	defer m.cpMu.Unlock()
	per := map[string]map[TopicPartition]int64{}
	for _, dir := range m.cfg.Dirs {
		if m.IsDirOnline(dir) {
			per[dir] = map[TopicPartition]int64{}
		}
	}
	for _, l := range m.list() {
		d := filepath.Dir(l.Dir())
		if v, ok := get(l); ok && per[d] != nil {
			per[d][l.tp] = v
		}
	}
	var errs []error
	for dir, cp := range per {
		path := filepath.Join(dir, file)
		data := encodeOffsetCheckpoint(cp)
		if bytes.Equal(data, m.written[path]) {
			continue
		}
		err := writeFileAtomic(m.cfg.FS, path, data)
		if err == nil {
			if m.written == nil {
				m.written = map[string][]byte{}
			}
			m.written[path] = data
		}
		if err != nil && isIOError(err) {
			// Kafka's checkpoint writes report to the LogDirFailureChannel:
			// a dir that cannot take a checkpoint goes offline.
			m.FailDir(dir, err)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (m *Manager) writeCheckpoints() error {
	return errors.Join(
		m.writeCheckpoint(recoveryPointCheckpointFile, (*Log).RecoveryPoint),
		m.writeCheckpoint(logStartCheckpointFile, (*Log).LogStartOffset),
		m.writeCheckpoint(highWatermarkCheckpointFile, (*Log).HighWatermark),
		m.writeCleanerCheckpoint(),
	)
}
