package group

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/internal/coordhash"
	"github.com/brook-mq/brook/protocol/batch"
)

// Partition is one __consumer_offsets partition led by this broker. The
// broker implements it on top of the replica layer.
type Partition interface {
	// Append writes one record batch and returns its base offset once it is
	// committed (acks=all semantics), or an error.
	Append(ctx context.Context, batch []byte) (int64, error)
	// Read returns whole raw batches starting at offset, below the high
	// watermark, at most maxBytes (at least one batch).
	Read(offset int64, maxBytes int32) ([]byte, error)
	LogStartOffset() int64
	HighWatermark() int64
}

// Config holds the broker configs of the group coordinator. Zero values
// take Kafka's defaults, except InitialRebalanceDelay, for which 0 is a
// meaningful setting (tests use it).
type Config struct {
	BrokerID              int32
	NumPartitions         int32         // offsets.topic.num.partitions (50)
	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms (Kafka's default is 3s)
	MinSessionTimeout     time.Duration // group.min.session.timeout.ms (6s)
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms (30m)
	MaxGroupSize          int32         // group.max.size (MaxInt32)
	OffsetsRetention      time.Duration // offsets.retention.minutes (7 days)
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms (10m).
	OffsetsRetentionCheckInterval time.Duration
	OffsetMetadataMaxBytes        int32 // offset.metadata.max.bytes (4096)
	LoadBufferSize                int32 // offsets.load.buffer.size (5 MiB)
	// TickInterval is how often Run fires expired deadlines (100ms).
	TickInterval time.Duration
	// MaxBatchBytes bounds the records the writer puts in one appended
	// batch, below the offsets topic's max.message.bytes (512 KiB).
	MaxBatchBytes int
	Now           func() time.Time
	Logger        *slog.Logger
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.NumPartitions <= 0 {
		c.NumPartitions = 50
	}
	c.InitialRebalanceDelay = max(c.InitialRebalanceDelay, 0)
	def(&c.MinSessionTimeout, 6*time.Second)
	def(&c.MaxSessionTimeout, 30*time.Minute)
	def(&c.OffsetsRetention, 7*24*time.Hour)
	def(&c.OffsetsRetentionCheckInterval, 10*time.Minute)
	def(&c.TickInterval, 100*time.Millisecond)
	if c.MaxGroupSize <= 0 {
		c.MaxGroupSize = math.MaxInt32
	}
	if c.OffsetMetadataMaxBytes <= 0 {
		c.OffsetMetadataMaxBytes = 4096
	}
	if c.LoadBufferSize <= 0 {
		c.LoadBufferSize = 5 << 20
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = 512 << 10
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Coordinator is the classic group coordinator of one broker: it owns the
// groups of the __consumer_offsets partitions this broker leads.
//
// Locking: Coordinator.mu guards the partition map only; each partition's
// lock guards its shard (all its groups) and write queue. mu is never held
// while taking a partition lock, and no lock is held across an append.
type Coordinator struct {
	cfg    Config
	log    *slog.Logger
	codecs *batch.Codecs
	limits limits

	mu    sync.Mutex
	parts map[int32]*partitionState
}

// partitionState is one led __consumer_offsets partition.
type partitionState struct {
	id    int32
	epoch int32
	p     Partition

	mu      sync.Mutex
	loading bool
	closed  bool
	sh      *shard
	queue   []write

	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{} // closed when the loader and writer have exited
}

// New returns a coordinator that leads no partition yet.
func New(cfg Config) *Coordinator {
	cfg.setDefaults()
	return &Coordinator{
		cfg:    cfg,
		log:    cfg.Logger,
		codecs: batch.MustCodecs(),
		limits: limits{
			minSessionTimeout:     cfg.MinSessionTimeout,
			maxSessionTimeout:     cfg.MaxSessionTimeout,
			initialRebalanceDelay: cfg.InitialRebalanceDelay,
			maxGroupSize:          int(cfg.MaxGroupSize),
			offsetsRetention:      cfg.OffsetsRetention,
			maxMetadataSize:       int(cfg.OffsetMetadataMaxBytes),
		},
		parts: map[int32]*partitionState{},
	}
}

// PartitionFor is the __consumer_offsets partition whose leader coordinates
// the group.
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return coordhash.PartitionFor(groupID, c.cfg.NumPartitions)
}

// OnElected starts loading a partition this broker now leads. Until the
// load finishes its groups answer COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) OnElected(partition, leaderEpoch int32, p Partition) {
	c.mu.Lock()
	old := c.parts[partition]
	if old != nil && old.epoch > leaderEpoch {
		c.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ps := &partitionState{
		id: partition, epoch: leaderEpoch, p: p, loading: true,
		kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}),
	}
	c.parts[partition] = ps
	c.mu.Unlock()
	if old != nil {
		c.unload(old)
	}
	c.log.Info("group coordinator elected", "partition", partition, "leader_epoch", leaderEpoch)
	go c.runPartition(ctx, ps)
}

// OnResigned drops a partition's groups; their requests then get
// NOT_COORDINATOR. A resignation for an older epoch than the one loaded is
// stale and ignored; -1 matches any epoch.
func (c *Coordinator) OnResigned(partition, leaderEpoch int32) {
	c.mu.Lock()
	ps := c.parts[partition]
	if ps == nil || (leaderEpoch >= 0 && leaderEpoch < ps.epoch) {
		c.mu.Unlock()
		return
	}
	delete(c.parts, partition)
	c.mu.Unlock()
	c.log.Info("group coordinator resigned", "partition", partition, "leader_epoch", leaderEpoch)
	c.unload(ps)
}

// Close resigns every partition and waits for their goroutines.
func (c *Coordinator) Close() {
	c.mu.Lock()
	parts := c.parts
	c.parts = map[int32]*partitionState{}
	c.mu.Unlock()
	for _, ps := range parts {
		c.unload(ps)
	}
}

// unload fails every waiting request of the partition's groups with
// NOT_COORDINATOR, as Kafka does when a coordinator moves, and stops its
// goroutines.
func (c *Coordinator) unload(ps *partitionState) {
	var eff effects
	ps.mu.Lock()
	ps.closed = true
	if ps.sh != nil {
		now := c.cfg.Now()
		for _, g := range ps.sh.groups {
			for _, m := range g.members {
				g.answerJoin(m, joinError(m.id, kerr.NotCoordinator.Code), &eff)
				if m.syncWaiter != nil {
					eff.sync(m.syncWaiter, syncResult{err: kerr.NotCoordinator.Code})
					m.syncWaiter = nil
				}
			}
			g.transition(StateDead, now)
		}
	}
	ps.mu.Unlock()
	eff.deliver()
	ps.cancel()
	<-ps.done
}

// runPartition loads the partition, then writes its queued records until
// the partition is unloaded.
func (c *Coordinator) runPartition(ctx context.Context, ps *partitionState) {
	defer close(ps.done)
	defer c.failQueued(ps)
	for {
		sh, err := c.load(ctx, ps)
		if err == nil {
			ps.mu.Lock()
			if ps.closed {
				ps.mu.Unlock()
				return
			}
			ps.sh, ps.loading = sh, false
			n := len(sh.groups)
			ps.mu.Unlock()
			c.log.Info("group coordinator loaded", "partition", ps.id, "groups", n)
			break
		}
		c.log.Error("load offsets partition", "partition", ps.id, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-ps.kick:
		}
		for c.flushQueue(ctx, ps) {
		}
	}
}

// step runs fn on the shard of groupID under its partition's lock, then
// queues the writes and answers waiters. The code is the coordinator-level
// error (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) when fn did not run.
func (c *Coordinator) step(groupID string, fn func(s *shard, now time.Time, eff *effects)) int16 {
	c.mu.Lock()
	ps := c.parts[c.PartitionFor(groupID)]
	c.mu.Unlock()
	if ps == nil {
		return kerr.NotCoordinator.Code
	}
	var eff effects
	ps.mu.Lock()
	switch {
	case ps.closed:
		ps.mu.Unlock()
		return kerr.NotCoordinator.Code
	case ps.loading:
		ps.mu.Unlock()
		return kerr.CoordinatorLoadInProgress.Code
	}
	fn(ps.sh, c.cfg.Now(), &eff)
	c.enqueueLocked(ps, &eff)
	ps.mu.Unlock()
	eff.deliver()
	return 0
}

func (c *Coordinator) enqueueLocked(ps *partitionState, eff *effects) {
	if len(eff.writes) == 0 {
		return
	}
	ps.queue = append(ps.queue, eff.writes...)
	eff.writes = nil
	select {
	case ps.kick <- struct{}{}:
	default:
	}
}

// flushQueue appends queued writes, as many as fit in one batch, and runs
// their completions in queue order, which is log order. It reports whether
// it did anything.
func (c *Coordinator) flushQueue(ctx context.Context, ps *partitionState) bool {
	ps.mu.Lock()
	n, size := 0, 0
	for n < len(ps.queue) {
		ws := 0
		for _, r := range ps.queue[n].records {
			ws += len(r.key) + len(r.value) + 32
		}
		if n > 0 && (size+ws > c.cfg.MaxBatchBytes || ps.queue[n].producer != ps.queue[0].producer) {
			break
		}
		size += ws
		n++
	}
	ws := ps.queue[:n:n]
	ps.queue = ps.queue[n:]
	ps.mu.Unlock()
	if len(ws) == 0 {
		return false
	}
	var recs []record
	for _, w := range ws {
		recs = append(recs, w.records...)
	}
	base, err := int64(-1), error(nil)
	if ctx.Err() != nil {
		err = ErrNotLeader
	} else if b, berr := buildBatch(recs, c.cfg.Now(), c.codecs, ws[0].producer); berr != nil {
		err = berr
	} else if base, err = ps.p.Append(ctx, b); err != nil && ctx.Err() != nil {
		err = ErrNotLeader
	}
	if err != nil {
		c.log.Warn("append to offsets partition", "partition", ps.id, "records", len(recs), "err", err)
	}
	c.complete(ps, ws, base, err)
	return true
}

func (c *Coordinator) complete(ps *partitionState, ws []write, base int64, err error) {
	var eff effects
	ps.mu.Lock()
	now := c.cfg.Now()
	offset := base
	for _, w := range ws {
		if w.done != nil && ps.sh != nil {
			w.done(ps.sh, err, offset, now, &eff)
		}
		if base >= 0 {
			offset += int64(len(w.records))
		}
	}
	c.enqueueLocked(ps, &eff)
	ps.mu.Unlock()
	eff.deliver()
	for _, w := range ws {
		if w.notify != nil {
			w.notify <- err
		}
	}
}

// failQueued completes writes that can no longer be appended.
func (c *Coordinator) failQueued(ps *partitionState) {
	for {
		ps.mu.Lock()
		ws := ps.queue
		ps.queue = nil
		ps.mu.Unlock()
		if len(ws) == 0 {
			return
		}
		c.complete(ps, ws, -1, ErrNotLeader)
	}
}

// Run fires timers (session expiry, join and sync deadlines, pending
// members, offsets retention) until ctx ends.
func (c *Coordinator) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.TickInterval)
	defer t.Stop()
	lastRetention := c.cfg.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := c.cfg.Now()
		expire := now.Sub(lastRetention) >= c.cfg.OffsetsRetentionCheckInterval
		if expire {
			lastRetention = now
		}
		c.tick(expire)
	}
}

// tick advances every loaded shard to the clock's now.
func (c *Coordinator) tick(expireOffsets bool) {
	c.mu.Lock()
	parts := make([]*partitionState, 0, len(c.parts))
	for _, ps := range c.parts {
		parts = append(parts, ps)
	}
	c.mu.Unlock()
	for _, ps := range parts {
		var eff effects
		ps.mu.Lock()
		if !ps.closed && !ps.loading {
			now := c.cfg.Now()
			ps.sh.tickAll(now, &eff)
			if expireOffsets {
				ps.sh.expireOffsets(now, &eff)
			}
			c.enqueueLocked(ps, &eff)
		}
		ps.mu.Unlock()
		eff.deliver()
	}
}

// OnTopicsDeleted removes the committed offsets of deleted topics from the
// groups of every loaded partition, writing tombstones, as Kafka does.
func (c *Coordinator) OnTopicsDeleted(topics ...string) {
	set := make(map[string]bool, len(topics))
	for _, t := range topics {
		set[t] = true
	}
	c.mu.Lock()
	parts := make([]*partitionState, 0, len(c.parts))
	for _, ps := range c.parts {
		parts = append(parts, ps)
	}
	c.mu.Unlock()
	for _, ps := range parts {
		var eff effects
		ps.mu.Lock()
		if !ps.closed && !ps.loading {
			ps.sh.removeTopicOffsets(set, c.cfg.Now(), &eff)
			c.enqueueLocked(ps, &eff)
		}
		ps.mu.Unlock()
		eff.deliver()
	}
}
