package log

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"
)

// cleanerOffsetCheckpointFile holds, per log dir, each compacted
// partition's first dirty offset, in the format of the other offset
// checkpoints (version 0), as Kafka names it.
const cleanerOffsetCheckpointFile = "cleaner-offset-checkpoint"

// CleanerConfig is the broker's log.cleaner.* configuration.
type CleanerConfig struct {
	Enable  bool // log.cleaner.enable (true)
	Threads int  // log.cleaner.threads (1)
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size (134217728),
	// shared by the threads: each offset map holds at most
	// DedupeBufferSize/Threads bytes.
	DedupeBufferSize int64
	// IOBufferLoadFactor is log.cleaner.io.buffer.load.factor (0.9).
	IOBufferLoadFactor float64
	// IOMaxBytesPerSecond is log.cleaner.io.max.bytes.per.second
	// (unlimited), over all threads, reads and writes together.
	IOMaxBytesPerSecond float64
	// Backoff is log.cleaner.backoff.ms (15000): the pause when no log
	// needs cleaning.
	Backoff time.Duration
}

func (c CleanerConfig) withDefaults() CleanerConfig {
	if c.DedupeBufferSize <= 0 {
		c.DedupeBufferSize = 128 << 20
	}
	if c.IOBufferLoadFactor <= 0 || c.IOBufferLoadFactor > 1 {
		c.IOBufferLoadFactor = 0.9
	}
	if c.IOMaxBytesPerSecond <= 0 {
		c.IOMaxBytesPerSecond = math.MaxFloat64
	}
	if c.Backoff <= 0 {
		c.Backoff = 15 * time.Second
	}
	return c
}

// cleanerState is the Manager's bookkeeping of the cleaner threads: their
// configuration, which logs are being cleaned, and which failed (Kafka's
// uncleanable partitions: a log whose cleaning hit corruption is not
// retried until the broker restarts, so the cleaner does not spin on it).
type cleanerState struct {
	mu          sync.Mutex
	cfg         CleanerConfig
	changed     chan struct{} // closed and replaced when cfg changes
	inProgress  map[TopicPartition]bool
	uncleanable map[TopicPartition]bool
	throttle    *throttler
}

func newCleanerState(cfg CleanerConfig, now func() time.Time) cleanerState {
	return cleanerState{
		cfg: cfg, changed: make(chan struct{}),
		inProgress: map[TopicPartition]bool{}, uncleanable: map[TopicPartition]bool{},
		throttle: newThrottler(cfg.IOMaxBytesPerSecond, now),
	}
}

// SetCleanerConfig applies a dynamic change of the log.cleaner.* configs.
// The throttle and the backoff change in place; a change of enable,
// threads, dedupe buffer or load factor restarts the cleaner threads, as
// Kafka's LogCleaner.reconfigure does.
func (m *Manager) SetCleanerConfig(c CleanerConfig) {
	c = c.withDefaults()
	st := &m.cleaner
	st.mu.Lock()
	defer st.mu.Unlock()
	st.throttle.setRate(c.IOMaxBytesPerSecond)
	if c == st.cfg {
		return
	}
	st.cfg = c
	close(st.changed)
	st.changed = make(chan struct{})
}

func (st *cleanerState) config() (CleanerConfig, <-chan struct{}) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cfg, st.changed
}

// runCleaner runs the cleaner threads until ctx is done, restarting them
// when their configuration changes.
func (m *Manager) runCleaner(ctx context.Context) {
	for ctx.Err() == nil {
		c, changed := m.cleaner.config()
		run, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for i := 0; c.Enable && i < c.Threads; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.cleanerThread(run, c)
			}()
		}
		for restart := false; !restart && ctx.Err() == nil; {
			select {
			case <-ctx.Done():
			case <-changed:
				// Only what the threads were built with needs a restart.
				next, ch := m.cleaner.config()
				restart = next.Enable != c.Enable || next.Threads != c.Threads ||
					next.DedupeBufferSize != c.DedupeBufferSize || next.IOBufferLoadFactor != c.IOBufferLoadFactor
				changed = ch
			}
		}
		stop()
		wg.Wait()
	}
}

// cleanerThread cleans the filthiest log, or sleeps log.cleaner.backoff.ms
// when none needs it, until ctx is done.
func (m *Manager) cleanerThread(ctx context.Context, c CleanerConfig) {
	offsets := newOffsetMap(min(c.DedupeBufferSize/int64(c.Threads), math.MaxInt32), c.IOBufferLoadFactor)
	for ctx.Err() == nil {
		if m.cleanFilthiest(ctx, offsets) {
			continue
		}
		cur, _ := m.cleaner.config()
		t := time.NewTimer(cur.Backoff)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// cleanFilthiest cleans the dirtiest compacted log, if one needs it, and
// writes the cleaner checkpoint; it reports whether it cleaned.
func (m *Manager) cleanFilthiest(ctx context.Context, offsets *offsetMap) bool {
	st := &m.cleaner
	nowMs := m.cfg.Now().UnixMilli()
	st.mu.Lock()
	var tps []TopicPartition
	var logs []*Log
	var ins []cleanInput
	for _, l := range m.list() {
		tp := l.tp
		if st.inProgress[tp] || st.uncleanable[tp] {
			continue
		}
		l.mu.RLock()
		if l.cfg.Compact && !l.closed {
			tps, logs, ins = append(tps, tp), append(logs, l), append(ins, l.cleanInputLocked(nowMs))
		}
		l.mu.RUnlock()
	}
	i, c, ok := filthiest(ins)
	if ok {
		st.inProgress[tps[i]] = true
	}
	st.mu.Unlock()
	if !ok {
		return false
	}
	tp, l := tps[i], logs[i]
	defer func() {
		st.mu.Lock()
		delete(st.inProgress, tp)
		st.mu.Unlock()
	}()
	env := cleanEnv{offsets: offsets, throttle: func(n int64) { st.throttle.wait(ctx, n) }}
	stats, err := l.clean(env, c)
	switch {
	case errors.Is(err, ErrClosed), errors.Is(err, errCleanAborted), ctx.Err() != nil:
		return false
	case err != nil:
		m.logger.Error("log cleaner: marking partition uncleanable", "partition", tp.String(), "err", err)
		st.mu.Lock()
		st.uncleanable[tp] = true
		st.mu.Unlock()
		return false
	}
	m.logger.Info("log cleaner: cleaned", "partition", tp.String(), "dirty_ratio", c.Ratio, "first_dirty_offset", c.FirstDirtyOffset,
		"end_offset", stats.EndOffset, "segments", stats.SegmentsCleaned, "bytes_read", stats.BytesRead, "bytes_written", stats.BytesWritten,
		"records_read", stats.RecordsRead, "records_kept", stats.RecordsKept, "map_entries", stats.MapEntries, "map_bytes", stats.MapMemoryBytes)
	m.logError("cleaner offset checkpoint", m.writeCleanerCheckpoint())
	return true
}

// writeCleanerCheckpoint writes cleaner-offset-checkpoint in each log dir
// with the logs that were cleaned at least once.
func (m *Manager) writeCleanerCheckpoint() error {
	return m.writeCheckpointIf(cleanerOffsetCheckpointFile, func(l *Log) (int64, bool) {
		cp := l.CleanerCheckpoint()
		return cp, cp > 0
	})
}

// throttler is a token bucket for log.cleaner.io.max.bytes.per.second,
// shared by the cleaner threads: up to one second's worth of bytes pass at
// once, then the bucket refills at the rate. Time is injected.
type throttler struct {
	mu     sync.Mutex
	rate   float64 // bytes per second
	tokens float64
	last   time.Time
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration)
}

func newThrottler(rate float64, now func() time.Time) *throttler {
	return &throttler{rate: rate, tokens: rate, now: now, sleep: sleepCtx}
}

// setRate changes the rate; the bucket keeps what it holds, up to the new
// burst.
func (t *throttler) setRate(rate float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rate = rate
	t.tokens = min(t.tokens, rate)
}

// take removes n bytes from the bucket and returns how long the caller
// must wait for them to be paid for.
func (t *throttler) take(n int64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate >= math.MaxFloat64 || math.IsInf(t.rate, 1) {
		return 0
	}
	now := t.now()
	if !t.last.IsZero() && now.After(t.last) {
		t.tokens = min(t.rate, t.tokens+now.Sub(t.last).Seconds()*t.rate)
	}
	t.last = now
	t.tokens -= float64(n)
	if t.tokens >= 0 {
		return 0
	}
	return time.Duration(-t.tokens / t.rate * float64(time.Second))
}

// wait takes n bytes and sleeps as long as the bucket says.
func (t *throttler) wait(ctx context.Context, n int64) {
	if t == nil {
		return
	}
	if d := t.take(n); d > 0 {
		t.sleep(ctx, d)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}
