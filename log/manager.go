package log

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brook-mq/brook/internal/parallel"
	"github.com/brook-mq/brook/protocol/batch"
)

// ManagerConfig is the broker-level log configuration.
type ManagerConfig struct {
	Dirs      []string // log.dirs
	BrokerID  int32
	ClusterID string
	// RetentionCheckInterval is log.retention.check.interval.ms (300000).
	RetentionCheckInterval time.Duration
	// FlushCheckInterval is log.flush.scheduler.interval.ms (Kafka's
	// default is "never"; zero or less means 1s, harmless since flush.ms
	// defaults to never too).
	FlushCheckInterval time.Duration
	// DeleteCheckInterval paces the removal of segments and partitions
	// whose file.delete.delay.ms has passed (default 1s).
	DeleteCheckInterval time.Duration
	// FlushOffsetCheckpointInterval is log.flush.offset.checkpoint.interval.ms (60000).
	FlushOffsetCheckpointInterval time.Duration
	// FlushStartOffsetCheckpointInterval is log.flush.start.offset.checkpoint.interval.ms (60000).
	FlushStartOffsetCheckpointInterval time.Duration
	// HighWatermarkCheckpointInterval is replica.high.watermark.checkpoint.interval.ms (5000).
	HighWatermarkCheckpointInterval time.Duration
	// ProducerIDExpiration is producer.id.expiration.ms (86400000), checked
	// every ProducerIDExpirationCheckInterval
	// (producer.id.expiration.check.interval.ms, 600000).
	ProducerIDExpiration              time.Duration
	ProducerIDExpirationCheckInterval time.Duration
	// RecoveryThreads is num.recovery.threads.per.data.dir (1): how many
	// logs of a dir open at once at startup.
	RecoveryThreads int
	// Cleaner configures compaction (see cleaner_run.go).
	Cleaner CleanerConfig
	Now     func() time.Time
	Logger  *slog.Logger
	// Codecs are shared by all logs (nil: one set made here).
	Codecs *batch.Codecs
	// OnDirFailure, if set, is told once of each log dir that fails while
	// the Manager runs, with the partitions that were in it (log_dirs.go).
	OnDirFailure func(dir string, partitions []TopicPartition)
	// FS is the file system of the log dirs (nil: the operating system's);
	// every log the Manager opens uses it.
	FS FS
	// MaxOpenFiles is brook.log.open.files.max: how many segment file
	// descriptors the logs keep open while idle (filecache.go); zero or
	// less means DefaultMaxOpenFiles.
	MaxOpenFiles int
}

func (c ManagerConfig) withDefaults() ManagerConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.RetentionCheckInterval, 300*time.Second)
	def(&c.FlushCheckInterval, time.Second)
	def(&c.DeleteCheckInterval, time.Second)
	def(&c.FlushOffsetCheckpointInterval, 60*time.Second)
	def(&c.FlushStartOffsetCheckpointInterval, 60*time.Second)
	def(&c.HighWatermarkCheckpointInterval, 5*time.Second)
	def(&c.ProducerIDExpiration, 24*time.Hour)
	def(&c.ProducerIDExpirationCheckInterval, 10*time.Minute)
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Cleaner = c.Cleaner.withDefaults()
	c.FS = fsOrOS(c.FS)
	if c.MaxOpenFiles <= 0 {
		c.MaxOpenFiles = DefaultMaxOpenFiles()
	}
	dirs := make([]string, len(c.Dirs))
	for i, d := range c.Dirs {
		dirs[i] = filepath.Clean(d)
	}
	c.Dirs = dirs
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Manager owns the logs of all partitions on this broker, across log dirs,
// and runs their background work.
type Manager struct {
	cfg       ManagerConfig
	configFor func(TopicPartition) Config
	logger    *slog.Logger

	locks []io.Closer // one .lock per log dir, held until Close
	// files holds the segment descriptors of every log (filecache.go).
	files *FileCache
	// written holds each checkpoint file's last written content, so
	// that an unchanged one is not written again (an idle broker's high
	// watermarks every 5 s: a file of every partition and an fsync).
	// Guarded by cpMu.
	written map[string][]byte
	// cpMu serializes checkpoint writes: Run and Close may both write one,
	// and they share the temporary file name.
	cpMu sync.Mutex

	// producerIDExpirationMs is producer.id.expiration.ms, which a
	// dynamic broker config may change while Run works.
	producerIDExpirationMs atomic.Int64

	mu   sync.Mutex
	logs map[TopicPartition]*Log
	// creating are the logs GetOrCreate is opening outside mu.
	creating map[TopicPartition]*creation
	// offlineDirs are the log dirs that failed; offline maps the
	// partitions that were in them to their dir (log_dirs.go).
	offlineDirs map[string]bool
	offline     map[TopicPartition]string
	// moves are the replicas being moved to another dir, preferred the
	// dirs asked for partitions without a log yet (future.go).
	moves     map[TopicPartition]*futureMove
	preferred map[TopicPartition]string
	deleting  []dirDelete
	closed    bool
	bg        sync.WaitGroup

	cleaner cleanerState
}

// dirDelete is a partition directory renamed to *-delete whose files are
// removed once file.delete.delay.ms has passed.
type dirDelete struct {
	log  *Log
	path string
	due  time.Time
}

// OpenManager loads every partition in cfg.Dirs, recovering those left by
// an unclean stop, and removes directories of deleted partitions. A log dir
// whose meta.properties names another broker or cluster is an error.
func OpenManager(cfg ManagerConfig, configFor func(TopicPartition) Config) (*Manager, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Dirs) == 0 {
		return nil, errors.New("log: no log dirs")
	}
	if configFor == nil {
		configFor = func(TopicPartition) Config { return DefaultConfig() }
	}
	if cfg.Codecs == nil {
		c, err := batch.NewCodecs(batch.CodecsConfig{})
		if err != nil {
			return nil, fmt.Errorf("log: codecs: %w", err)
		}
		cfg.Codecs = c
	}
	m := &Manager{cfg: cfg, configFor: configFor, logger: cfg.Logger, files: NewFileCache(cfg.MaxOpenFiles), logs: map[TopicPartition]*Log{}, creating: map[TopicPartition]*creation{},
		offlineDirs: map[string]bool{}, offline: map[TopicPartition]string{},
		moves: map[TopicPartition]*futureMove{}, preferred: map[TopicPartition]string{}}
	m.cleaner = newCleanerState(cfg.Cleaner, cfg.Now)
	m.SetProducerIDExpiration(cfg.ProducerIDExpiration)
	for _, dir := range cfg.Dirs {
		err := m.loadDir(dir)
		if err != nil && isIOError(err) && !errors.Is(err, ErrDirLocked) {
			// As Kafka, a dir that cannot be read starts offline; the
			// broker serves from the others.
			m.logger.Error("log dir failed at startup; it is offline", "dir", dir, "err", err)
			m.offlineDirs[dir] = true
			for tp, l := range m.logs {
				if filepath.Dir(l.Dir()) == dir {
					l.Close()
					delete(m.logs, tp)
				}
			}
			continue
		}
		if err != nil {
			for _, l := range m.logs {
				l.Close()
			}
			m.unlock()
			return nil, err
		}
	}
	if len(m.offlineDirs) == len(cfg.Dirs) {
		m.unlock()
		return nil, fmt.Errorf("%w: every log dir failed (%s)", ErrLogDirOffline, strings.Join(cfg.Dirs, ","))
	}
	return m, nil
}

func (m *Manager) loadDir(dir string) error {
	if err := m.cfg.FS.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create log dir %s: %w", dir, err)
	}
	lock, err := m.cfg.FS.Lock(dir)
	if err != nil {
		return err
	}
	m.locks = append(m.locks, lock)
	if err := m.checkMeta(dir); err != nil {
		return err
	}
	marker := filepath.Join(dir, cleanShutdownFile)
	_, err = m.cfg.FS.Stat(marker)
	clean := err == nil
	start := time.Now() // for the log line only: cfg.Now is the logs' clock
	rp := m.readCheckpoint(dir, recoveryPointCheckpointFile)
	ls := m.readCheckpoint(dir, logStartCheckpointFile)
	hw := m.readCheckpoint(dir, highWatermarkCheckpointFile)
	cc := m.readCheckpoint(dir, cleanerOffsetCheckpointFile)
	ents, err := m.cfg.FS.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list log dir %s: %w", dir, err)
	}
	type found struct {
		tp  TopicPartition
		dir string
	}
	var todo []found
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), "-delete") || isFutureDir(e.Name()) {
			m.removeInBackground(p)
			continue
		}
		tp, ok := parseDirName(e.Name())
		if !ok {
			m.logger.Warn("ignoring directory in log dir", "dir", p)
			continue
		}
		if _, dup := m.logs[tp]; dup {
			return fmt.Errorf("log: partition %s found in two log dirs", tp)
		}
		todo = append(todo, found{tp, p})
	}
	// num.recovery.threads.per.data.dir logs open at once, as Kafka's
	// recovery pool: a log's load waits mostly on the disk (a rewritten
	// leader epoch checkpoint costs two fsyncs).
	logs := make([]*Log, len(todo))
	errs := make([]error, len(todo))
	parallel.ForEach(len(todo), m.cfg.RecoveryThreads, func(i int) {
		tp := todo[i].tp
		logs[i], errs[i] = Open(todo[i].dir, m.configFor(tp), Options{
			FS: m.cfg.FS, Files: m.files, Now: m.cfg.Now, Logger: m.logger, Codecs: m.cfg.Codecs, RecoveryPoint: rp[tp], LogStartOffset: ls[tp],
			HighWatermark: hw[tp], CleanShutdown: clean, CleanerCheckpoint: cc[tp], OnIOError: m.dirFailer(dir),
		})
	})
	var firstErr error
	for i, l := range logs {
		if errs[i] != nil && firstErr == nil {
			firstErr = errs[i]
		}
		if l != nil {
			// Kept even on an error, so that the caller closes them.
			m.logs[todo[i].tp] = l
		}
	}
	if firstErr != nil {
		return firstErr
	}
	// As Kafka's "Loaded N logs in T ms": the figure an operator of tens
	// of thousands of partitions watches at a restart.
	m.logger.Info("loaded logs", "dir", dir, "logs", len(todo), "clean_shutdown", clean, "took", time.Since(start))
	// The marker describes only the stop that just ended; without it the
	// next start after a crash would skip recovery.
	if err := m.cfg.FS.Remove(marker); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove %s: %w", marker, err)
	}
	return m.cfg.FS.SyncDir(dir)
}

func (m *Manager) checkMeta(dir string) error {
	name := filepath.Join(dir, metaPropertiesFile)
	data, err := m.cfg.FS.ReadFile(name)
	if os.IsNotExist(err) {
		return writeFileAtomic(m.cfg.FS, name, encodeMetaProperties(metaProperties{BrokerID: m.cfg.BrokerID, ClusterID: m.cfg.ClusterID}))
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	meta, err := decodeMetaProperties(data)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if meta.BrokerID != m.cfg.BrokerID {
		return fmt.Errorf("%w: %s has broker.id %d, this broker is %d", ErrInconsistentMeta, name, meta.BrokerID, m.cfg.BrokerID)
	}
	if m.cfg.ClusterID != "" && meta.ClusterID != m.cfg.ClusterID {
		return fmt.Errorf("%w: %s has cluster.id %q, the cluster is %q", ErrInconsistentMeta, name, meta.ClusterID, m.cfg.ClusterID)
	}
	return nil
}

// readCheckpoint returns an empty map for a missing or unreadable file: an
// empty recovery point only costs a longer recovery.
func (m *Manager) readCheckpoint(dir, file string) map[TopicPartition]int64 {
	cp, err := readOffsetCheckpoint(m.cfg.FS, filepath.Join(dir, file))
	if err != nil {
		m.logger.Warn("checkpoint unreadable; ignoring it", "err", err)
		return map[TopicPartition]int64{}
	}
	return cp
}

func (m *Manager) removeInBackground(path string) {
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		if err := m.cfg.FS.RemoveAll(path); err != nil {
			m.logger.Error("remove deleted partition", "dir", path, "err", err)
		}
	}()
}

// Get returns the log of tp, or nil.
func (m *Manager) Get(tp TopicPartition) *Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.logs[tp]
}

// list returns the open logs, in no order. The background loops walk
// every log each tick (flush and deletion checks every second): copying
// pointers costs a broker with 50,000 partitions far less than copying
// All's map, which took a tenth of a core there.
func (m *Manager) list() []*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Log, 0, len(m.logs))
	for _, l := range m.logs {
		out = append(out, l)
	}
	return out
}

// All returns a copy of the partition -> log map.
func (m *Manager) All() map[TopicPartition]*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]*Log, len(m.logs))
	for tp, l := range m.logs {
		out[tp] = l
	}
	return out
}

// GetOrCreate returns the log of tp, creating it in the log dir with the
// fewest partitions. A non-zero topicID must match partition.metadata.
func (m *Manager) GetOrCreate(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return nil, ErrClosed
		}
		if dir, ok := m.offline[tp]; ok {
			m.mu.Unlock()
			return nil, errOffline(tp, dir)
		}
		if l := m.logs[tp]; l != nil {
			m.mu.Unlock()
			if topicID != ([16]byte{}) {
				if err := l.SetTopicID(topicID); err != nil {
					return nil, err
				}
			}
			return l, nil
		}
		c, ok := m.creating[tp]
		if !ok {
			break
		}
		m.mu.Unlock()
		<-c.done
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	if _, ok := parseDirName(tp.dirName()); !ok || tp.Topic == "" || strings.ContainsAny(tp.Topic, "/\\") || tp.Topic == "." || tp.Topic == ".." {
		return nil, fmt.Errorf("log: invalid partition name %q", tp.dirName())
	}
	best, err := m.dirForNewLocked(tp)
	if err != nil {
		return nil, err
	}
	// Open creates files and fsyncs them: outside mu, so that the
	// partitions of one LeaderAndIsr request are created in parallel
	// (replica.Manager) and Get, Run and the fetch path do not wait on
	// the disk. creating makes a second caller for tp wait for this one.
	c := &creation{dir: best, done: make(chan struct{})}
	m.creating[tp] = c
	m.mu.Unlock()
	l, err := Open(filepath.Join(best, tp.dirName()), cfg, Options{FS: m.cfg.FS, Files: m.files, Now: m.cfg.Now, Logger: m.logger, Codecs: m.cfg.Codecs, TopicID: topicID, OnIOError: m.dirFailer(best)})
	m.mu.Lock()
	delete(m.creating, tp)
	close(c.done)
	if err != nil {
		if isIOError(err) {
			go m.FailDir(best, err)
			return nil, fmt.Errorf("%w: create %s in %s: %v", ErrLogDirOffline, tp, best, err)
		}
		return nil, err
	}
	if m.closed || m.offlineDirs[best] {
		// Closed, or the dir failed, while the log was being created.
		_ = l.Close()
		if m.closed {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("%w: %s failed while %s was created", ErrLogDirOffline, best, tp)
	}
	m.logs[tp] = l
	return l, nil
}

// creation is a log GetOrCreate is creating in dir outside Manager.mu;
// done closes once it is in logs (or failed).
type creation struct {
	dir  string
	done chan struct{}
}

// dirForNewLocked picks the online log dir for a new partition: the one
// AlterReplicaLogDirs named, else the one with the fewest partitions
// (counting those being created). With one dir there is nothing to count:
// counting every log for every new one made creating n partitions cost
// n^2/2 steps.
func (m *Manager) dirForNewLocked(tp TopicPartition) (string, error) {
	online := m.onlineDirsLocked()
	if len(online) == 0 {
		return "", fmt.Errorf("%w: no log dir is online for %s", ErrLogDirOffline, tp)
	}
	best := online[0]
	if len(online) > 1 {
		count := map[string]int{}
		for _, l := range m.logs {
			count[filepath.Dir(l.Dir())]++
		}
		for _, c := range m.creating {
			count[c.dir]++
		}
		for _, d := range online[1:] {
			if count[d] < count[best] {
				best = d
			}
		}
	}
	if d, ok := m.preferred[tp]; ok && slices.Contains(online, d) {
		best = d // AlterReplicaLogDirs named it before the replica existed
	}
	delete(m.preferred, tp)
	return best, nil
}

// Delete removes tp's log: the directory is renamed to
// <topic>-<partition>.<uuid>-delete at once and its files are closed and
// removed after file.delete.delay.ms, so in-flight reads complete.
func (m *Manager) Delete(tp TopicPartition) error {
	m.mu.Lock()
	l := m.logs[tp]
	delete(m.logs, tp)
	m.cancelMoveLocked(tp)
	m.mu.Unlock()
	if l == nil {
		return nil
	}
	l.closeForDelete()
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return fmt.Errorf("delete %s: %w", tp, err)
	}
	to := filepath.Join(filepath.Dir(l.Dir()), fmt.Sprintf("%s.%s-delete", tp.dirName(), hex.EncodeToString(id[:])))
	if err := l.renameDir(l.Dir(), to); err != nil {
		return fmt.Errorf("delete %s: %w", tp, err)
	}
	if err := m.cfg.FS.SyncDir(filepath.Dir(to)); err != nil {
		return err
	}
	due := m.cfg.Now().Add(time.Duration(l.Config().FileDeleteDelayMs) * time.Millisecond)
	m.mu.Lock()
	m.deleting = append(m.deleting, dirDelete{log: l, path: to, due: due})
	m.mu.Unlock()
	return nil
}

// Close shuts down cleanly: every log is flushed and closed, the
// checkpoints are written and each log dir gets .kafka_cleanshutdown so the
// next start skips recovery.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	logs := m.logs
	deleting := m.deleting
	m.deleting = nil
	for tp := range m.moves {
		m.cancelMoveLocked(tp) // a move is asked again after a restart
	}
	m.mu.Unlock()
	// Each close fsyncs (the producer snapshot, the trimmed indexes):
	// num.recovery.threads.per.data.dir logs close at once, as Kafka's
	// shutdown uses the recovery pool.
	all := make([]*Log, 0, len(logs))
	for _, l := range logs {
		all = append(all, l)
	}
	closeErrs := make([]error, len(all))
	parallel.ForEach(len(all), m.cfg.RecoveryThreads*len(m.cfg.Dirs), func(i int) {
		if err := all[i].Close(); err != nil {
			closeErrs[i] = fmt.Errorf("close %s: %w", all[i].tp, err)
		}
	})
	errs := closeErrs
	for _, d := range deleting {
		errs = append(errs, d.log.release(), m.cfg.FS.RemoveAll(d.path))
	}
	if err := m.writeCheckpoints(); err != nil {
		errs = append(errs, err)
	}
	m.bg.Wait()
	defer m.unlock()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, dir := range m.cfg.Dirs {
		if !m.IsDirOnline(dir) {
			continue // nothing there was flushed
		}
		if err := writeFileAtomic(m.cfg.FS, filepath.Join(dir, cleanShutdownFile), []byte(cleanShutdownContent)); err != nil {
			return err
		}
	}
	return nil
}

// dirFailer is the OnIOError of the logs in dir.
func (m *Manager) dirFailer(dir string) func(error) {
	return func(err error) { m.FailDir(dir, err) }
}

func (m *Manager) unlock() {
	for _, f := range m.locks {
		f.Close()
	}
	m.locks = nil
}
