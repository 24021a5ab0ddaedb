package replica

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/parallel"
	"github.com/brook-mq/brook/log"
)

// Listener hears of leadership changes, e.g. the group coordinator for
// __consumer_offsets partitions. Calls come without locks held.
type Listener interface {
	BecameLeader(p *Partition, leaderEpoch int32)
	Resigned(tp log.TopicPartition, leaderEpoch int32)
}

// Cluster is how replication reaches other brokers and the controller.
type Cluster interface {
	// Request sends req to broker id's inter-broker listener on the
	// connection kept for purpose, and returns its response.
	Request(ctx context.Context, id int32, purpose string, req kmsg.Request) (kmsg.Response, error)
	// AlterPartition sends ISR changes to the active controller.
	AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)
}

// Config configures a Manager. Durations and sizes mirror Kafka's
// replica.* broker configs.
type Config struct {
	LocalID int32
	Logs    *log.Manager
	// ConfigFor gives a topic's log config.
	ConfigFor func(topic string) log.Config
	Listener  Listener
	// Cluster is nil on a single node: nothing to fetch from or report to.
	Cluster Cluster

	ReplicaLagTimeMax     time.Duration // replica.lag.time.max.ms
	FetchWaitMax          time.Duration // replica.fetch.wait.max.ms
	FetchMinBytes         int32         // replica.fetch.min.bytes
	FetchMaxBytes         int32         // replica.fetch.max.bytes, per partition
	FetchResponseMaxBytes int32         // replica.fetch.response.max.bytes
	FetchBackoff          time.Duration // replica.fetch.backoff.ms
	SocketTimeout         time.Duration // replica.socket.timeout.ms

	// LeaderQuota and FollowerQuota are the replication throttles
	// (quota.go); nil: unthrottled. The leader's is applied by the fetch
	// handler, the follower's by the fetchers.
	LeaderQuota   *Quota
	FollowerQuota *Quota
	// ThrottledReplicas gives a topic's leader.replication.throttled.replicas
	// and follower.replication.throttled.replicas; nil: none.
	ThrottledReplicas func(topic string) (leader, follower []string)

	// BrokerEpoch gives this broker's epoch (the czxid of its
	// registration), which a follower's fetches carry and a leader's ISR
	// changes name it with (KIP-903); nil, or a value <= 0 before the
	// broker registered: -1, not checked.
	BrokerEpoch func() int64

	Now    func() time.Time
	Logger *slog.Logger

	// Faults re-enables bugs fixed in the past, for tests that show the
	// deterministic simulation (sim/) finds them. Zero in production.
	Faults Faults
}

// Faults are old bugs a test may switch back on.
type Faults struct {
	// ForgetFailedISRChange drops an ISR change whose AlterPartition failed
	// or went unanswered, as before "a failed or unanswered AlterPartition
	// keeps the ISR change pending": the HW then counts only the committed
	// ISR although the controller may have applied the change.
	ForgetFailedISRChange bool
	// NoEpochStartAtElection undoes "a new leader records its epoch's start
	// offset, and a follower cuts to its HW on an UNDEFINED
	// OffsetForLeaderEpoch answer": a new leader records nothing until it
	// writes in its epoch, and a follower keeps its log on UNDEFINED.
	NoEpochStartAtElection bool
	// NoBrokerEpochs undoes KIP-903's broker epochs: fetches and ISR
	// changes carry -1, so a controller applies a leader's expansion built
	// from a follower's earlier incarnation (KAFKA-14139).
	NoBrokerEpochs bool
}

func (c Config) withDefaults() Config {
	if c.ReplicaLagTimeMax <= 0 {
		c.ReplicaLagTimeMax = 30 * time.Second
	}
	if c.FetchWaitMax <= 0 {
		c.FetchWaitMax = 500 * time.Millisecond
	}
	if c.FetchMinBytes <= 0 {
		c.FetchMinBytes = 1
	}
	if c.FetchMaxBytes <= 0 {
		c.FetchMaxBytes = 1 << 20
	}
	if c.FetchResponseMaxBytes <= 0 {
		c.FetchResponseMaxBytes = 10 << 20
	}
	if c.FetchBackoff <= 0 {
		c.FetchBackoff = time.Second
	}
	if c.SocketTimeout <= 0 {
		c.SocketTimeout = 30 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.LeaderQuota == nil {
		c.LeaderQuota = NewQuota(QuotaConfig{Now: c.Now})
	}
	if c.FollowerQuota == nil {
		c.FollowerQuota = NewQuota(QuotaConfig{Now: c.Now})
	}
	return c
}

// brokerEpoch is this broker's epoch to send, -1 when unknown.
func (m *Manager) brokerEpoch() int64 {
	if m.cfg.BrokerEpoch == nil || m.cfg.Faults.NoBrokerEpochs {
		return -1
	}
	if e := m.cfg.BrokerEpoch(); e > 0 {
		return e
	}
	return -1
}

// Manager owns the Partition objects hosted on this broker, the follower
// fetchers (one per leader broker) and the sending of ISR changes.
type Manager struct {
	cfg       Config
	localID   int32
	logs      *log.Manager
	configFor func(topic string) log.Config
	listener  Listener
	logger    *slog.Logger
	// isrChanged wakes Run to send pending ISR changes.
	isrChanged chan struct{}
	isrStats   isrStats
	// isrHolds counts the follower fetches being read (HoldISRChanges);
	// isrWakeHeld is a wake of the ISR sender they held back.
	isrHolds    atomic.Int32
	isrWakeHeld atomic.Bool

	// stateChangeMu makes LeaderAndISR and StopReplica apply one after
	// the other, as Kafka's replicaStateChangeLock does: ApplyLeaderAndISR
	// starts its fetches only once every partition of its request is
	// applied, and no other decision may change those partitions between.
	stateChangeMu sync.Mutex

	mu         sync.RWMutex
	partitions map[log.TopicPartition]*Partition

	// fetchMu guards fetchers and runCtx; lock order: fetchMu -> fetcher.mu
	// -> Partition.mu, and fetchMu -> mu (addFetches).
	fetchMu  sync.Mutex
	fetchers map[int32]*fetcher
	runCtx   context.Context
	fetchWG  sync.WaitGroup
}

// NewManager creates the manager.
func NewManager(cfg Config) *Manager {
	cfg = cfg.withDefaults()
	return &Manager{
		cfg:        cfg,
		localID:    cfg.LocalID,
		logs:       cfg.Logs,
		configFor:  cfg.ConfigFor,
		listener:   cfg.Listener,
		logger:     cfg.Logger,
		isrChanged: make(chan struct{}, 1),
		partitions: make(map[log.TopicPartition]*Partition),
		fetchers:   make(map[int32]*fetcher),
	}
}

// LeaderQuota is the leader-side replication throttle.
func (m *Manager) LeaderQuota() *Quota { return m.cfg.LeaderQuota }

// FollowerQuota is the follower-side replication throttle.
func (m *Manager) FollowerQuota() *Quota { return m.cfg.FollowerQuota }

// Get returns the hosted partition or nil.
func (m *Manager) Get(topic string, partition int32) *Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.partitions[log.TopicPartition{Topic: topic, Partition: partition}]
}

// All returns every hosted partition.
func (m *Manager) All() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.partitions))
	for _, p := range m.partitions {
		out = append(out, p)
	}
	return out
}

// UpdateConfig applies a topic's new log config and replication
// throttles to its hosted partitions.
func (m *Manager) UpdateConfig(topic string) {
	m.applyThrottles(topic)
	cfg := m.configFor(topic)
	for _, p := range m.All() {
		if p.tp.Topic == topic {
			p.log.SetConfig(cfg)
		}
	}
}

// applyThrottles marks which of topic's partitions the replication
// throttles hold back on this broker (Kafka's TopicConfigHandler).
func (m *Manager) applyThrottles(topic string) {
	if m.cfg.ThrottledReplicas == nil {
		return
	}
	leader, follower := m.cfg.ThrottledReplicas(topic)
	all, parts := ThrottledPartitions(leader, m.localID)
	m.cfg.LeaderQuota.SetThrottled(topic, all, parts)
	all, parts = ThrottledPartitions(follower, m.localID)
	m.cfg.FollowerQuota.SetThrottled(topic, all, parts)
}

// ApplyLeaderAndISR applies the controller's decisions for the partitions
// in req that name this broker as a replica: it opens or creates their logs
// and sets leader, epoch and ISR. Older epochs are answered with
// STALE_CONTROLLER_EPOCH per partition, as Kafka does.
//
// The partitions are independent and each costs a few fsyncs (a new log's
// files, the leader epoch checkpoint), so up to leaderAndISRParallelism of
// them are applied at once: one after the other, a request for 10,000
// partitions took minutes on a disk with 5 ms fsyncs. The answer and the
// listener's events keep the request's order.
//
// The partitions it makes followers start fetching together, once all are
// applied, as Kafka's addFetcherForPartitions: added one by one, the first
// fetch to a leader carried the few applied by then and held the others
// back by a whole replica.fetch.wait.max.ms long poll (a broker rejoining
// with 50,000 partitions waited 0.5 s more to be back in their ISRs).
func (m *Manager) ApplyLeaderAndISR(req *kmsg.LeaderAndISRRequest) *kmsg.LeaderAndISRResponse {
	m.stateChangeMu.Lock()
	defer m.stateChangeMu.Unlock()
	resp := kmsg.NewPtrLeaderAndISRResponse()
	resp.SetVersion(req.GetVersion())
	type job struct {
		ts      *kmsg.LeaderAndISRRequestTopicState
		ps      *kmsg.LeaderAndISRRequestTopicPartition
		rp      *kmsg.LeaderAndISRResponseTopicPartition
		p       *Partition
		applied bool
		changed bool
		follow  bool
	}
	var jobs []job
	resp.Topics = make([]kmsg.LeaderAndISRResponseTopic, len(req.TopicStates))
	for i := range req.TopicStates {
		ts := &req.TopicStates[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewLeaderAndISRResponseTopic()
		rt.TopicID = ts.TopicID
		rt.Partitions = make([]kmsg.LeaderAndISRResponseTopicPartition, len(ts.PartitionStates))
		for j := range ts.PartitionStates {
			rt.Partitions[j] = kmsg.NewLeaderAndISRResponseTopicPartition()
			jobs = append(jobs, job{ts: ts, ps: &ts.PartitionStates[j], rp: &rt.Partitions[j]})
		}
	}
	run := func(jb *job) {
		ts, ps, rp := jb.ts, jb.ps, jb.rp
		rp.Topic, rp.Partition = ts.Topic, ps.Partition
		p, created, err := m.getOrCreate(ts.Topic, ps.Partition, ts.TopicID, ps.IsNew)
		if created {
			m.applyThrottles(ts.Topic)
		}
		if err != nil {
			m.logger.Error("open partition for LeaderAndISR", "topic", ts.Topic, "partition", ps.Partition, "err", err)
			rp.ErrorCode = kerr.KafkaStorageError.Code
			return
		}
		st := State{ps.Leader, ps.LeaderEpoch, ps.Replicas, ps.ISR, ps.ZKVersion}
		jb.p = p
		jb.changed, jb.applied, jb.follow = m.apply(p, st)
		if !jb.applied {
			rp.ErrorCode = kerr.StaleControllerEpoch.Code
		}
	}
	parallel.ForEach(len(jobs), leaderAndISRParallelism, func(i int) { run(&jobs[i]) })
	var follows []followed
	for _, jb := range jobs {
		if jb.follow {
			follows = append(follows, followed{jb.p, jb.ps.Leader, jb.ps.LeaderEpoch})
		}
	}
	m.addFetches(follows)
	if m.listener != nil {
		for _, jb := range jobs {
			switch {
			case !jb.applied:
			case jb.ps.Leader == m.localID:
				m.listener.BecameLeader(jb.p, jb.ps.LeaderEpoch)
			case jb.changed:
				m.listener.Resigned(jb.p.tp, jb.ps.LeaderEpoch)
			}
		}
	}
	return resp
}

// leaderAndISRParallelism bounds the partitions of one LeaderAndIsr
// request applied at once: the work waits on fsyncs, not on CPU.
const leaderAndISRParallelism = 16

// getOrCreate returns tp's Partition, creating it and its log if needed.
// The log is opened outside m.mu (it fsyncs), so that ApplyLeaderAndISR's
// workers create logs side by side; log.Manager makes a second caller for
// the same partition wait for the first.
func (m *Manager) getOrCreate(topic string, partition int32, topicID [16]byte, isNew bool) (p *Partition, created bool, err error) {
	tp := log.TopicPartition{Topic: topic, Partition: partition}
	m.mu.Lock()
	if p, ok := m.partitions[tp]; ok {
		m.mu.Unlock()
		return p, false, nil
	}
	err = m.errNoLogWithOfflineDirs(tp, isNew)
	m.mu.Unlock()
	if err != nil {
		return nil, false, err
	}
	l, err := m.logs.GetOrCreate(tp, topicID, m.configFor(topic))
	if err != nil {
		return nil, false, fmt.Errorf("log for %s-%d: %w", topic, partition, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.partitions[tp]; ok {
		return p, false, nil
	}
	p = &Partition{
		tp: tp, topicID: l.TopicID(), localID: m.localID, log: l,
		now: m.cfg.Now, lagMax: m.cfg.ReplicaLagTimeMax, isrChanged: m.wakeISRSender,
		isrStats: &m.isrStats, leader: -1, leaderEpoch: -1, faults: m.cfg.Faults,
		brokerEpoch: m.brokerEpoch,
	}
	m.partitions[tp] = p
	return p, true, nil
}

// Leader epochs of StopReplica with a meaning of their own, as Kafka's
// LeaderAndIsr defines them.
const (
	// StopReplicaNoEpoch is the epoch of a request before v3, which
	// carries none: it skips the epoch check.
	StopReplicaNoEpoch int32 = -1
	// StopReplicaEpochDuringDelete is the epoch of a topic deletion, which
	// does not bump the leader epoch: it overrides any epoch.
	StopReplicaEpochDuringDelete int32 = -2
)

// ApplyStopReplica stops hosting the partitions in req, deleting their logs
// when asked to. As Kafka's ReplicaManager.stopReplicas does, a partition
// whose request epoch is older than its current one is answered
// FENCED_LEADER_EPOCH and left alone: the StopReplica was decided before a
// LeaderAndISR this broker has already applied (a reassignment that was
// cancelled or replaced and gave the replica back, say), and applying it
// would stop or delete a replica the controller now counts on.
func (m *Manager) ApplyStopReplica(req *kmsg.StopReplicaRequest) *kmsg.StopReplicaResponse {
	m.stateChangeMu.Lock()
	defer m.stateChangeMu.Unlock()
	resp := kmsg.NewPtrStopReplicaResponse()
	resp.SetVersion(req.GetVersion())
	for _, t := range req.Topics {
		for _, ps := range stopReplicaStates(req, t) {
			rp := kmsg.NewStopReplicaResponsePartition()
			rp.Topic, rp.Partition = t.Topic, ps.Partition
			rp.ErrorCode = m.stopChecked(t.Topic, ps)
			resp.Partitions = append(resp.Partitions, rp)
		}
	}
	return resp
}

// stopReplicaStates returns t's partitions as v3+ states: before v3 a
// request names partitions without an epoch (NoEpoch) and with one delete
// flag for all, as Kafka's StopReplicaRequest.partitionStates reads them.
func stopReplicaStates(req *kmsg.StopReplicaRequest, t kmsg.StopReplicaRequestTopic) []kmsg.StopReplicaRequestTopicPartitionState {
	if req.GetVersion() >= 3 {
		return t.PartitionStates
	}
	ids := t.Partitions
	if req.GetVersion() == 0 {
		ids = []int32{t.Partition}
	}
	states := make([]kmsg.StopReplicaRequestTopicPartitionState, len(ids))
	for i, id := range ids {
		states[i] = kmsg.NewStopReplicaRequestTopicPartitionState()
		states[i].Partition, states[i].LeaderEpoch, states[i].Delete = id, StopReplicaNoEpoch, req.DeletePartitions
	}
	return states
}

// stopChecked applies one partition of a StopReplica after its epoch check
// and returns the partition's error code.
func (m *Manager) stopChecked(topic string, ps kmsg.StopReplicaRequestTopicPartitionState) int16 {
	epoch := ps.LeaderEpoch
	if p := m.Get(topic, ps.Partition); p != nil && epoch != StopReplicaNoEpoch && epoch != StopReplicaEpochDuringDelete {
		if cur := p.State().LeaderEpoch; epoch < cur {
			m.logger.Warn("StopReplica with an older leader epoch ignored", "topic", topic, "partition", ps.Partition,
				"delete", ps.Delete, "leader_epoch", epoch, "current", cur)
			return kerr.FencedLeaderEpoch.Code
		}
	}
	if err := m.stop(topic, ps.Partition, epoch, ps.Delete); err != nil {
		m.logger.Error("stop replica", "topic", topic, "partition", ps.Partition, "err", err)
		return kerr.KafkaStorageError.Code
	}
	return 0
}

func (m *Manager) stop(topic string, partition, leaderEpoch int32, del bool) error {
	tp := log.TopicPartition{Topic: topic, Partition: partition}
	m.mu.Lock()
	p, ok := m.partitions[tp]
	if ok && del {
		delete(m.partitions, tp)
	}
	m.mu.Unlock()
	if !ok {
		if del && m.logs.Get(tp) != nil {
			return m.logs.Delete(tp)
		}
		return nil
	}
	wasLeader := p.IsLeader()
	m.removeFetch(tp)
	cur := p.State()
	p.become(State{Leader: -1, LeaderEpoch: max(leaderEpoch, cur.LeaderEpoch), ZKVersion: cur.ZKVersion})
	if wasLeader && m.listener != nil {
		m.listener.Resigned(tp, leaderEpoch)
	}
	if del {
		return m.logs.Delete(tp)
	}
	return nil
}

// apply makes p follow decision s: it stops fetching for p before the role
// changes, so no follower append races a new leadership, and reports
// follow when this broker is to fetch from the new leader (addFetches).
func (m *Manager) apply(p *Partition, s State) (changed, applied, follow bool) {
	if !p.accepts(s) {
		m.logger.Warn("stale LeaderAndISR ignored", "partition", p.tp, "leader", s.Leader, "leader_epoch", s.LeaderEpoch, "zk_version", s.ZKVersion, "current", p.State())
		return false, false, false
	}
	if cur := p.State(); cur.Leader == s.Leader && cur.LeaderEpoch == s.LeaderEpoch && cur.ZKVersion == s.ZKVersion &&
		slices.Equal(cur.ISR, s.ISR) && slices.Equal(cur.Replicas, s.Replicas) {
		// A repeat (e.g. from a new controller): restarting the fetcher or
		// dropping an ISR change in flight would only lose progress.
		return false, true, false
	}
	m.logger.Info("LeaderAndISR", "partition", p.tp, "leader", s.Leader, "leader_epoch", s.LeaderEpoch, "isr", s.ISR, "zk_version", s.ZKVersion)
	m.removeFetch(p.tp)
	changed, applied, err := p.become(s)
	if !applied {
		return false, false, false
	}
	if err != nil {
		// The epoch cache in memory has changed, but the checkpoint on
		// disk lags until the cache next changes.
		m.logger.Error("leader epoch checkpoint", "partition", p.tp, "leader_epoch", s.LeaderEpoch, "err", err)
	}
	if s.Leader == m.localID {
		p.maybeAdvanceHighWatermark()
	}
	return changed, true, s.Leader != m.localID && s.Leader >= 0 && m.cfg.Cluster != nil
}

// wakeISRSender wakes Run to send the pending ISR changes, unless a
// follower fetch is being read: then the wake waits for the end of that
// read (HoldISRChanges). Set before the holds are read, so that a hold
// released in between still sees it.
func (m *Manager) wakeISRSender() {
	m.isrWakeHeld.Store(true)
	if m.isrHolds.Load() == 0 {
		m.deliverHeldWake()
	}
}

func (m *Manager) deliverHeldWake() {
	if !m.isrWakeHeld.Swap(false) {
		return
	}
	select {
	case m.isrChanged <- struct{}{}:
	default:
	}
}

// HoldISRChanges holds back the ISR sender while the leader reads a
// follower's fetch, until the returned release: the ISR changes that one
// fetch proposes then go in one AlterPartition. A rejoining follower's
// first fetch names every partition it follows here, and each proposes
// to take it back into the ISR; woken at the first, the sender sent a few
// hundred of 25,000 and the rest waited for the controller's answer. A
// release delivers any wake held meanwhile, whatever other holds remain,
// so a stream of overlapping fetches delays a change by one read at most.
func (m *Manager) HoldISRChanges() (release func()) {
	m.isrHolds.Add(1)
	return func() {
		m.isrHolds.Add(-1)
		m.deliverHeldWake()
	}
}
