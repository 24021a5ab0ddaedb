package txn

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/internal/coordhash"
	"github.com/brook-mq/brook/protocol/batch"
)

// Partition is one __transaction_state partition led by this broker. The
// broker implements it on top of the replica layer.
type Partition interface {
	// Append writes one record batch and returns its base offset once it
	// is committed (acks=all), or an error.
	Append(ctx context.Context, batch []byte) (int64, error)
	// Read returns whole raw batches starting at offset, below the log end
	// offset, at most maxBytes (at least one batch).
	Read(offset int64, maxBytes int32) ([]byte, error)
	LogStartOffset() int64
	LogEndOffset() int64
	// HighWatermark is the offset below which records are committed: a
	// load reads to the log end but is acted on only once the HW has
	// reached it (load.go). The step driver polls it at every Step.
	HighWatermark() int64
	// WaitForHighWatermark blocks until the HW reaches offset, this broker
	// stops leading the partition, or ctx ends (an error for the last
	// two): the goroutine driver's wait for its load to be committed.
	WaitForHighWatermark(ctx context.Context, offset int64) error
}

// MarkerSender writes transaction markers: a COMMIT or ABORT control batch
// on each partition of job, sent as WriteTxnMarkers to the partition's
// leader, in process or over the inter-broker client. It returns each
// partition's error code; a partition missing from the answer (the request
// failed) is retried. A partition whose topic no longer exists counts as
// written, as Kafka drops it from the transaction.
type MarkerSender interface {
	WriteMarkers(ctx context.Context, job MarkerJob) map[TopicPartition]int16
}

// Config holds the broker configs of the transaction coordinator. Zero
// values take Kafka's defaults.
type Config struct {
	NumPartitions int32         // transaction.state.log.num.partitions (50)
	MaxTimeout    time.Duration // transaction.max.timeout.ms (15m)
	IDExpiration  time.Duration // transactional.id.expiration.ms (7 days)
	// AbortTimedOutInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10s).
	AbortTimedOutInterval time.Duration
	// RemoveExpiredInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms (1h).
	RemoveExpiredInterval time.Duration
	LoadBufferSize        int32 // transaction.state.log.load.buffer.size (5 MiB)
	// OffsetsNumPartitions is offsets.topic.num.partitions (50), for the
	// __consumer_offsets partition AddOffsetsToTxn adds.
	OffsetsNumPartitions int32
	// MarkerRetryBackoff is the pause before markers that failed are sent
	// again (100ms).
	MarkerRetryBackoff time.Duration
	// NewProducerID allocates a cluster-unique producer id.
	NewProducerID func(ctx context.Context) (int64, error)
	Markers       MarkerSender
	Now           func() time.Time
	Logger        *slog.Logger
	// Faults are fixed bugs a test can switch back on (the simulation).
	Faults Faults
}

// Faults are reverted fixes of the coordinator, for tests that show a
// simulation finds them. The zero value is the correct coordinator.
type Faults struct {
	// NoResumeOnLoad: a new coordinator does not send the markers of the
	// transactions its predecessor left in PrepareCommit or PrepareAbort,
	// so they hang (Kafka's loadTransactionsForTxnTopicPartition resumes
	// them).
	NoResumeOnLoad bool
	// InitForgetsOngoing: InitProducerId over an ongoing transaction bumps
	// the epoch and empties the id without aborting it (Kafka fences the
	// producer and aborts it first, answering CONCURRENT_TRANSACTIONS
	// until the abort is complete), so the transaction's partitions keep
	// it open.
	InitForgetsOngoing bool
	// ActAboveHighWatermark: a new coordinator acts on its load (answers
	// requests, resumes markers) as soon as it has read to the log end, as
	// Kafka's does, also when its HW has not reached the records read, so
	// that a failover losing them makes the next coordinator decide a
	// prepared transaction again (seed 135) or forget partitions it said
	// were added (seed 901).
	ActAboveHighWatermark bool
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
	if c.OffsetsNumPartitions <= 0 {
		c.OffsetsNumPartitions = 50
	}
	def(&c.MaxTimeout, 15*time.Minute)
	def(&c.IDExpiration, 7*24*time.Hour)
	def(&c.AbortTimedOutInterval, 10*time.Second)
	def(&c.RemoveExpiredInterval, time.Hour)
	def(&c.MarkerRetryBackoff, 100*time.Millisecond)
	if c.LoadBufferSize <= 0 {
		c.LoadBufferSize = 5 << 20
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Coordinator is the transaction coordinator of one broker: it owns the
// transactional ids of the __transaction_state partitions this broker
// leads.
//
// Locking: Coordinator.mu guards the partition map only; each partition's
// lock guards its shard and write queue. mu is never held while taking a
// partition lock, and no lock is held across an append or a marker send.
type Coordinator struct {
	cfg    Config
	log    *slog.Logger
	codecs *batch.Codecs
	limits limits

	mu    sync.Mutex
	parts map[int32]*partitionState
	// lastExpiry is when Tick last removed expired ids.
	lastExpiry time.Time
}

// partitionState is one led __transaction_state partition.
type partitionState struct {
	id    int32
	epoch int32
	p     Partition

	mu      sync.Mutex
	loading bool
	closed  bool
	sh      *shard
	queue   []write

	// async: the partition is an AsyncPartition, driven by Step with no
	// goroutine (async.go); inFlight: its append is outstanding; runs are
	// its marker jobs under way.
	async    bool
	inFlight bool
	runs     []*markerRun

	// loadedSh and loadedEnd are the async driver's load waiting for the
	// HW to reach loadedEnd, touched by Step only (the goroutine driver
	// keeps them on runPartition's stack).
	loadedSh  *shard
	loadedEnd int64

	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	// workers counts the writer and the marker senders; unload waits for
	// them.
	workers sync.WaitGroup
}

// New returns a coordinator that leads no partition yet.
func New(cfg Config) *Coordinator {
	cfg.setDefaults()
	c := &Coordinator{cfg: cfg, log: cfg.Logger, codecs: batch.MustCodecs(), parts: map[int32]*partitionState{}, lastExpiry: cfg.Now()}
	c.limits = limits{
		faults:         cfg.Faults,
		maxTimeoutMs:   int32(cfg.MaxTimeout.Milliseconds()),
		idExpirationMs: cfg.IDExpiration.Milliseconds(),
		offsetsPartsFor: func(groupID string) int32 {
			return coordhash.PartitionFor(groupID, cfg.OffsetsNumPartitions)
		},
	}
	return c
}

// PartitionFor is the __transaction_state partition whose leader
// coordinates the transactional id.
func (c *Coordinator) PartitionFor(txnID string) int32 {
	return coordhash.PartitionFor(txnID, c.cfg.NumPartitions)
}

// OnElected starts loading a partition this broker now leads. Until the
// load finishes and the partition's HW reaches the records it read, its
// ids answer COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) OnElected(partition, leaderEpoch int32, p Partition) {
	c.mu.Lock()
	old := c.parts[partition]
	if old != nil && (old.epoch > leaderEpoch || (old.epoch == leaderEpoch && old.p == p)) {
		// Stale, or the same leadership announced again: a reload would
		// fail the requests in flight for nothing. A new epoch reloads,
		// as in Kafka, so that markers carry the new coordinator epoch.
		c.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, async := p.(AsyncPartition)
	ps := &partitionState{
		id: partition, epoch: leaderEpoch, p: p, loading: true, async: async,
		kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel,
	}
	c.parts[partition] = ps
	c.mu.Unlock()
	if old != nil {
		c.unload(old)
	}
	c.log.Info("transaction coordinator elected", "partition", partition, "leader_epoch", leaderEpoch)
	if async {
		return // loaded by the next Step
	}
	ps.workers.Add(1)
	go c.runPartition(ps)
}

// OnResigned drops a partition's ids; their requests then get
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
	c.log.Info("transaction coordinator resigned", "partition", partition, "leader_epoch", leaderEpoch)
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

// unload stops a partition's writer and marker senders. Appends in flight
// fail, and their requests get NOT_COORDINATOR; markers not yet written
// are left to the next coordinator, which resumes them from the log.
func (c *Coordinator) unload(ps *partitionState) {
	ps.mu.Lock()
	ps.closed = true
	ps.mu.Unlock()
	ps.cancel()
	if ps.async {
		// No writer goroutine to fail them on its way out.
		c.failQueued(ps)
	}
	ps.workers.Wait()
}

// runPartition loads the partition, waits for the HW to reach what it
// read, then appends its queued records until the partition is unloaded.
func (c *Coordinator) runPartition(ps *partitionState) {
	defer ps.workers.Done()
	defer c.failQueued(ps)
	for {
		sh, end, err := c.load(ps.ctx, ps)
		if err == nil {
			if !c.awaitCommitted(ps, end) || !c.loaded(ps, sh) {
				return
			}
			break
		}
		c.log.Error("load transaction state partition", "partition", ps.id, "err", err)
		select {
		case <-ps.ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	for {
		select {
		case <-ps.ctx.Done():
			return
		case <-ps.kick:
		}
		for c.flushOne(ps) {
		}
	}
}

// loaded installs a loaded shard and resumes the markers of the
// transactions a previous coordinator left prepared, so that a failover
// completes them. It reports false if the partition was unloaded
// meanwhile.
func (c *Coordinator) loaded(ps *partitionState, sh *shard) bool {
	var eff effects
	ps.mu.Lock()
	if ps.closed {
		ps.mu.Unlock()
		return false
	}
	ps.sh, ps.loading = sh, false
	if !c.cfg.Faults.NoResumeOnLoad {
		sh.resumeMarkers(&eff)
	}
	n, resumed := len(sh.txns), len(eff.markers)
	c.effectsLocked(ps, &eff)
	ps.mu.Unlock()
	c.log.Info("transaction coordinator loaded", "partition", ps.id, "transactional_ids", n, "resumed_markers", resumed)
	return true
}

// step runs fn on the shard of txnID under its partition's lock, then
// queues writes, starts marker senders and answers. The code is the
// coordinator-level error (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS)
// when fn did not run.
func (c *Coordinator) step(txnID string, fn func(s *shard, now time.Time, eff *effects)) int16 {
	c.mu.Lock()
	ps := c.parts[c.PartitionFor(txnID)]
	c.mu.Unlock()
	if ps == nil {
		return kerr.NotCoordinator.Code
	}
	return c.stepPartition(ps, fn)
}

func (c *Coordinator) stepPartition(ps *partitionState, fn func(s *shard, now time.Time, eff *effects)) int16 {
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
	c.effectsLocked(ps, &eff)
	ps.mu.Unlock()
	eff.deliver()
	return 0
}

// effectsLocked queues eff's writes and starts its marker senders; the
// caller delivers its replies after unlocking.
func (c *Coordinator) effectsLocked(ps *partitionState, eff *effects) {
	if len(eff.writes) > 0 {
		ps.queue = append(ps.queue, eff.writes...)
		eff.writes = nil
		select {
		case ps.kick <- struct{}{}:
		default:
		}
	}
	for _, job := range eff.markers {
		if ps.closed {
			break
		}
		if ps.async {
			ps.runs = append(ps.runs, &markerRun{job: job, remaining: job.Partitions})
			continue
		}
		ps.workers.Add(1)
		go c.runMarkers(ps, job)
	}
	eff.markers = nil
}

// flushOne appends the first queued write and completes it. It reports
// whether there was one.
func (c *Coordinator) flushOne(ps *partitionState) bool {
	ps.mu.Lock()
	if len(ps.queue) == 0 {
		ps.mu.Unlock()
		return false
	}
	w := ps.queue[0]
	ps.queue = ps.queue[1:]
	ps.mu.Unlock()
	var err error
	if ps.ctx.Err() != nil {
		err = ErrNotLeader
	} else if b, berr := buildBatch(w.record, c.cfg.Now(), c.codecs); berr != nil {
		err = berr
	} else if _, err = ps.p.Append(ps.ctx, b); err != nil && ps.ctx.Err() != nil {
		err = ErrNotLeader
	}
	if err != nil {
		c.log.Warn("append to transaction state partition", "partition", ps.id, "err", err)
	}
	c.complete(ps, w, err)
	return true
}

func (c *Coordinator) complete(ps *partitionState, w write, err error) {
	var eff effects
	ps.mu.Lock()
	if w.done != nil && ps.sh != nil {
		w.done(ps.sh, err, c.cfg.Now(), &eff)
	}
	c.effectsLocked(ps, &eff)
	ps.mu.Unlock()
	eff.deliver()
	if w.notify != nil {
		w.notify <- err
	}
}

// failQueued completes writes that can no longer be appended.
func (c *Coordinator) failQueued(ps *partitionState) {
	for {
		ps.mu.Lock()
		if len(ps.queue) == 0 {
			ps.mu.Unlock()
			return
		}
		w := ps.queue[0]
		ps.queue = ps.queue[1:]
		ps.mu.Unlock()
		c.complete(ps, w, ErrNotLeader)
	}
}

// Run aborts timed-out transactions every
// transaction.abort.timed.out.transaction.cleanup.interval.ms and removes
// expired ids every transaction.remove.expired.transaction.cleanup.interval.ms,
// until ctx ends.
func (c *Coordinator) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.AbortTimedOutInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.Tick()
	}
}

// Tick is one round of Run, for a driver that calls it every
// transaction.abort.timed.out.transaction.cleanup.interval.ms of its own
// clock: it aborts the transactions past their timeout at the clock's now,
// and removes expired ids when
// transaction.remove.expired.transaction.cleanup.interval.ms has passed
// since they were last removed.
func (c *Coordinator) Tick() {
	now := c.cfg.Now()
	c.mu.Lock()
	expire := now.Sub(c.lastExpiry) >= c.cfg.RemoveExpiredInterval
	if expire {
		c.lastExpiry = now
	}
	c.mu.Unlock()
	c.tick(expire)
}

// tick advances every loaded shard to the clock's now, in partition order.
func (c *Coordinator) tick(expire bool) {
	for _, ps := range c.partitions() {
		c.stepPartition(ps, func(s *shard, now time.Time, eff *effects) { s.tick(now, expire, eff) })
	}
}

func (c *Coordinator) partitions() []*partitionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	parts := make([]*partitionState, 0, len(c.parts))
	for _, ps := range c.parts {
		parts = append(parts, ps)
	}
	slices.SortFunc(parts, func(a, b *partitionState) int { return cmp.Compare(a.id, b.id) })
	return parts
}
