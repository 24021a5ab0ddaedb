package group

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/internal/coordhash"
	"github.com/brook-mq/brook/protocol/batch"
)

// Partition is one __consumer_offsets partition led by this broker. The
// broker implements it on top of the replica layer. Its dynamic type must
// be comparable: OnElected tells a repeated election of the same partition
// from a new one by ==.
type Partition interface {
	// Append writes one record batch and returns its base offset once it is
	// committed (acks=all semantics), or an error; ctx's error if ctx ends
	// first (the coordinator's commit timeout).
	Append(ctx context.Context, batch []byte) (int64, error)
	// Read returns whole raw batches starting at offset, below the log end
	// offset, at most maxBytes (at least one batch).
	Read(offset int64, maxBytes int32) ([]byte, error)
	LogStartOffset() int64
	// LogEndOffset is the offset after the last record in the log. The
	// loader replays up to it, not to the high watermark: a new leader's
	// high watermark trails the old one's until its followers fetch again,
	// and the records above it were acknowledged by the old leader.
	LogEndOffset() int64
	// HighWatermark is the offset below which records are committed: a
	// load is served only once the HW has reached its end (load.go). The
	// step driver polls it at every Step.
	HighWatermark() int64
	// WaitForHighWatermark blocks until the HW reaches offset, this broker
	// stops leading the partition, or ctx ends (an error for the last
	// two): the goroutine driver's wait for its load to be committed.
	WaitForHighWatermark(ctx context.Context, offset int64) error
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
	// CommitTimeout is offsets.commit.timeout.ms (5s): how long a write
	// of commits or group metadata, from its queueing, waits for the
	// append to be committed before it is answered REQUEST_TIMED_OUT (a
	// commit) or REBALANCE_IN_PROGRESS (a SyncGroup), as Kafka's delayed
	// produce of the coordinator does.
	CommitTimeout time.Duration
	// MaxBatchBytes bounds the records the writer puts in one appended
	// batch, below the offsets topic's max.message.bytes (512 KiB).
	MaxBatchBytes int
	Now           func() time.Time
	// NewTimer starts a timer on the clock Now reads: the channel receives
	// once d has passed; stop releases it. Run arms it for the next
	// deadline, so tests that drive Now drive deadlines too.
	NewTimer func(d time.Duration) (c <-chan time.Time, stop func())
	Logger   *slog.Logger
	// NewMemberID makes the member ids JoinGroup hands out from a
	// prefix (client.id or group.instance.id); nil makes Kafka's
	// "<prefix>-<random uuid>". The simulation makes them from its seed.
	NewMemberID func(prefix string) string
	// Faults are fixed bugs a test can switch back on (the simulation).
	Faults Faults
}

// Faults are reverted fixes of the coordinator, for tests that show a
// checker finds them. The zero value is the correct code.
type Faults struct {
	// LoadToHighWatermark loads a new leader's partition only up to its
	// high watermark (for a Partition with a HighWatermark method), as
	// before the Hardening II fix: the commits the previous coordinator
	// acknowledged above it are forgotten.
	LoadToHighWatermark bool
	// ActAboveHighWatermark serves a load at once, as Kafka's
	// GroupMetadataManager does, instead of once the HW reaches its end:
	// a generation read from a record a failover then loses is handed to
	// members, and the next coordinator hands the same generation out
	// again with another leader and assignment.
	ActAboveHighWatermark bool
	// CommitSkipsGenerationCheck accepts a member's commit whatever its
	// member id and generation (an injected bug, not a reverted fix): a
	// member fenced by a rebalance commits over the new generation's.
	CommitSkipsGenerationCheck bool
	// StableSkipsTxnOffsets leaves pending transactional offsets out of
	// OffsetFetch's require_stable check (an injected bug): a fetch sees
	// the group's last committed offset as stable while a transaction's
	// offset for it waits for its marker.
	StableSkipsTxnOffsets bool
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
	def(&c.CommitTimeout, 5*time.Second)
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
	if c.NewTimer == nil {
		c.NewTimer = func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTimer(d)
			return t.C, func() { t.Stop() }
		}
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

	// Run's timer (timers.go): wake tells it that a deadline earlier than
	// armed was set; reported is the earliest set while it computes the
	// next. Both hold Unix ns.
	wake     chan struct{}
	armed    atomic.Int64
	reported atomic.Int64
}

// partitionState is one led __consumer_offsets partition.
type partitionState struct {
	id    int32
	epoch int32 // guarded by Coordinator.mu
	p     Partition

	mu      sync.Mutex
	loading bool
	closed  bool
	sh      *shard
	queue   []write
	// txnMarkers arrived while loading (txn_offsets.go).
	txnMarkers []txnMarker

	// inFlight: an AsyncPartition's append is outstanding (async.go).
	inFlight bool
	// loadedSh and loadedEnd are the async driver's load waiting for the
	// HW to reach loadedEnd, touched by Step only (the goroutine driver
	// keeps them on its stack).
	loadedSh  *shard
	loadedEnd int64

	kick   chan struct{}
	ctx    context.Context // an AsyncPartition's: ended by unload
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
		wake:  make(chan struct{}, 1),
	}
}

// PartitionFor is the __consumer_offsets partition whose leader coordinates
// the group.
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return coordhash.PartitionFor(groupID, c.cfg.NumPartitions)
}

// OnElected starts loading a partition this broker now leads. Until the
// load finishes its groups answer COORDINATOR_LOAD_IN_PROGRESS.
//
// Only new leadership loads. The controller also names this broker leader
// again when the ISR shrinks or a new controller resends its decisions;
// the groups in memory are then still the log's, and reloading would fail
// every rebalance in progress with NOT_COORDINATOR and replay the whole
// partition. Kafka reacts only to partitions that become leader
// (ReplicaManager's onLeadershipChange), and so does this: the same
// Partition at a newer or equal epoch only raises the epoch kept for
// stale resignations.
func (c *Coordinator) OnElected(partition, leaderEpoch int32, p Partition) {
	c.mu.Lock()
	old := c.parts[partition]
	if old != nil && old.epoch > leaderEpoch {
		c.mu.Unlock()
		return
	}
	if old != nil && old.p == p {
		old.epoch = leaderEpoch
		c.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ps := &partitionState{
		id: partition, epoch: leaderEpoch, p: p, loading: true,
		kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}),
	}
	_, async := p.(AsyncPartition)
	if async {
		// Steps load it and write its queue (async.go); no goroutine to wait for.
		ps.ctx = ctx
		close(ps.done)
	}
	c.parts[partition] = ps
	c.mu.Unlock()
	if old != nil {
		c.unload(old)
	}
	c.log.Info("group coordinator elected", "partition", partition, "leader_epoch", leaderEpoch)
	if async {
		return
	}
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
	if ps.ctx != nil {
		// No writer goroutine ran failQueued on its way out.
		c.failQueued(ps)
	}
}

// runPartition loads the partition, then writes its queued records until
// the partition is unloaded.
func (c *Coordinator) runPartition(ctx context.Context, ps *partitionState) {
	defer close(ps.done)
	defer c.failQueued(ps)
	for {
		sh, end, err := c.load(ctx, ps)
		if err == nil {
			if !c.awaitCommitted(ctx, ps, end) || !c.loaded(ps, sh) {
				return
			}
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

// loaded installs a partition's loaded shard; false if it was unloaded
// meanwhile. The loaded members' sessions start here rather than at the
// load, which may have waited for the HW for a while.
func (c *Coordinator) loaded(ps *partitionState, sh *shard) bool {
	var eff effects
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return false
	}
	ps.sh, ps.loading = sh, false
	now := c.cfg.Now()
	for _, g := range sh.groups {
		c.onGroupLoaded(sh, g, now, &eff)
	}
	// A loaded group has no waiters, so the only effects are writes.
	c.enqueueLocked(ps, &eff)
	ps.applyTxnMarkers()
	n := len(sh.groups)
	next := sh.nextDeadline()
	ps.mu.Unlock()
	c.noteDeadline(next)
	c.log.Info("group coordinator loaded", "partition", ps.id, "groups", n)
	return true
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
	var next time.Time
	if g := ps.sh.groups[groupID]; g != nil {
		next = g.nextDeadline()
	}
	ps.mu.Unlock()
	eff.deliver()
	c.noteDeadline(next)
	return 0
}

func (c *Coordinator) enqueueLocked(ps *partitionState, eff *effects) {
	if len(eff.writes) == 0 {
		return
	}
	// The commit timeout runs from here, in wall-clock time like the
	// append's context, whatever clock the state machine uses.
	queued := time.Now()
	for i := range eff.writes {
		eff.writes[i].queued = queued
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
	ws, recs := c.nextBatch(ps)
	if len(ws) == 0 {
		return false
	}
	base, err := c.appendBatch(ctx, ps, recs, ws[0].producer, ws[0].queued.Add(c.cfg.CommitTimeout))
	c.appended(ps, ws, len(recs), base, err)
	return true
}

// nextBatch takes the queued writes that go in the next batch, as many as
// fit, and their records.
func (c *Coordinator) nextBatch(ps *partitionState) ([]write, []record) {
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
	var recs []record
	for _, w := range ws {
		recs = append(recs, w.records...)
	}
	return ws, recs
}

// appended completes the writes of one appended batch of n records.
func (c *Coordinator) appended(ps *partitionState, ws []write, n int, base int64, err error) {
	if err != nil {
		c.log.Warn("append to offsets partition", "partition", ps.id, "records", n, "err", err)
	}
	c.complete(ps, ws, base, err)
}

// appendBatch appends recs and waits for them to be committed until
// deadline, the deadline of the oldest write among them. An append that
// outlives it answers with kerr.RequestTimedOut; its records stay in the
// log, as in Kafka, and may still be committed.
func (c *Coordinator) appendBatch(ctx context.Context, ps *partitionState, recs []record, producer *batch.Producer, deadline time.Time) (int64, error) {
	if ctx.Err() != nil {
		return -1, ErrNotLeader
	}
	b, err := buildBatch(recs, c.cfg.Now(), c.codecs, producer)
	if err != nil {
		return -1, err
	}
	actx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	base, err := ps.p.Append(actx, b)
	switch {
	case err == nil:
		return base, nil
	case ctx.Err() != nil:
		return -1, ErrNotLeader
	case errors.Is(err, context.DeadlineExceeded):
		return -1, fmt.Errorf("offsets partition %d: %w", ps.id, kerr.RequestTimedOut)
	}
	return -1, err
}

func (c *Coordinator) complete(ps *partitionState, ws []write, base int64, err error) {
	var eff effects
	ps.mu.Lock()
	now := c.cfg.Now()
	offset := base
	var next time.Time
	for _, w := range ws {
		if w.done != nil && ps.sh != nil {
			w.done(ps.sh, err, offset, now, &eff)
			if g := ps.sh.groups[w.group]; g != nil {
				if t := g.nextDeadline(); !t.IsZero() && (next.IsZero() || t.Before(next)) {
					next = t
				}
			}
		}
		if base >= 0 {
			offset += int64(len(w.records))
		}
	}
	c.enqueueLocked(ps, &eff)
	ps.mu.Unlock()
	eff.deliver()
	c.noteDeadline(next)
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
