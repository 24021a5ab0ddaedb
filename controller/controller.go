package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brook-mq/brook/controller/store"
)

// Config configures a Controller.
type Config struct {
	BrokerID int32
	// DefaultReplicationFactor and NumPartitions are the broker's
	// default.replication.factor and num.partitions, for callers that create
	// topics through the controller (Options of CreateTopics).
	DefaultReplicationFactor int16
	NumPartitions            int32
	// DeleteTopicEnable is delete.topic.enable (Kafka's default is true).
	// When false, deletion markers are removed without deleting the topic.
	DeleteTopicEnable bool
	// UncleanLeaderElection is the static unclean.leader.election.enable
	// (server.properties). Dynamic broker configs and topic overrides take
	// precedence; the controller reads them from the store (unclean.go).
	UncleanLeaderElection bool
	// AutoLeaderRebalanceEnable is auto.leader.rebalance.enable: every
	// LeaderImbalanceCheckInterval (leader.imbalance.check.interval.seconds,
	// Kafka's default 300 s) leadership moves back to preferred replicas on
	// brokers whose imbalance exceeds LeaderImbalancePerBrokerPercentage
	// (leader.imbalance.per.broker.percentage, default 10).
	AutoLeaderRebalanceEnable          bool
	LeaderImbalanceCheckInterval       time.Duration
	LeaderImbalancePerBrokerPercentage int
	// InterBrokerListener names the listener advertised to followers in
	// LeaderAndISR (inter.broker.listener.name); empty: PLAINTEXT.
	InterBrokerListener string
	Logger              *slog.Logger
	Now                 func() time.Time
	// Faults re-enables fixed bugs of the decisions, for the simulation's
	// tests (ClusterState.Faults).
	Faults Faults
	// CachedStates, when set, returns the partition states this broker's
	// metadata cache holds for the topic with that id (as the last
	// controller sent them, with their znode versions; Mzxid unset), or
	// nil. A newly elected controller starts from them rather than read
	// every state znode, and confirms them afterwards (seed.go). Each call
	// must return maps and slices of its own.
	CachedStates func(topic string, id [16]byte) map[int32]PartitionState
}

// FailureBackoff is the pause after a failed term before standing again
// (exported for the drivers of a stepped controller, such as sim/).
const FailureBackoff = time.Second

// errLostControl ends an active term: another controller took over, our
// znode vanished, or our writes were fenced.
var errLostControl = errors.New("controller: lost controllership")

// Controller runs controller election and, while elected, Kafka's
// ZooKeeper-mode controller: one event goroutine that owns the cluster
// state, reacts to watches, writes partition state and tells brokers.
type Controller struct {
	cfg    Config
	st     Store
	sender Sender
	// env is a stepped controller's driver (step.go); nil: Run's
	// goroutines drive it.
	env Env
	log *slog.Logger

	activeID atomic.Int32
	active   atomic.Bool

	mu      sync.Mutex // guards pending
	pending pendingEvents
	wake    chan struct{} // cap 1: "pending has something"

	// Owned by the Run goroutine (or the Env's).
	state          *ClusterState
	epochZkVersion int32
	// term counts terms begun and ended, so that a stepped controller's
	// watches of an earlier term are dropped (Run's end with its context).
	term      uint64
	channels  map[int32]brokerChannel
	deletions map[string]*deletion
	// deletionsArmed: a watch on /admin/delete_topics is outstanding. It is
	// re-armed only after it fired, since processDeletions also runs on
	// broker changes and must not pile up watches.
	deletionsArmed bool
	// configSeq is the sequence number of the last config change
	// notification handled (config_changes.go).
	configSeq int64
	// zkReassignArmed: a watch on /admin/reassign_partitions is
	// outstanding; zkReassignSeen is the czxid of the znode last read, so
	// that each znode is read once, when created (reassign_driver.go).
	zkReassignArmed bool
	zkReassignSeen  int64
	// brokerWatches: brokers whose registration has a data watch
	// outstanding (Kafka's BrokerModificationsHandler): a broker that
	// rewrites its znode (new endpoints after a listener reconfiguration)
	// is announced to every broker.
	brokerWatches map[int32]bool
	// prefElectArmed: an existence watch on
	// /admin/preferred_replica_election is outstanding.
	prefElectArmed bool
	// recheckDeletions: a reassignment completed, so a deletion that
	// waited for it may proceed.
	recheckDeletions bool
	// loopErr is an error met while serving a call (AlterPartition, ...),
	// handled by the loop like any other event failure.
	loopErr error
	// prevEpoch and prevEpochZxid are the controller epoch this term
	// followed and the zxid it was won at; seeding says that the term's
	// first load may take states from Config.CachedStates, seeded lists
	// those it took, and seedPending is their read-back in flight (seed.go).
	prevEpoch     int32
	prevEpochZxid int64
	seeding       bool
	seeded        []TP
	seedPending   *seedCheck
}

// pendingEvents coalesces what happened since the event loop last looked,
// so that watch goroutines and broker channels never block on the loop.
type pendingEvents struct {
	controller  bool
	sessionLost bool
	brokers     bool
	topics      bool
	deletions   bool
	// configChanges: /config/changes has new notifications.
	configChanges bool
	topicData     map[string]bool
	rebalance     bool
	// zkReassign: /admin/reassign_partitions was created, changed or deleted.
	zkReassign bool
	// logDirEvents: /log_dir_event_notification has new notifications;
	// offlineReplicas: brokers answered KAFKA_STORAGE_ERROR for these.
	logDirEvents    bool
	offlineReplicas map[int32][]TP
	// isrChanges: /isr_change_notification has new notifications;
	// zkPreferredElection: /admin/preferred_replica_election was created
	// or deleted.
	isrChanges          bool
	zkPreferredElection bool
	// brokerModified: the registration of these brokers changed.
	brokerModified map[int32]bool
	stopReplica    []stopReplicaResult
	calls          []func(ctx context.Context, active bool)
	// seedChecked: the seeded partition states were read back, or are to
	// be read back by a stepped controller (seed.go).
	seedChecked *seedCheck
}

// New returns a controller; Run starts it.
func New(cfg Config, st Store, sender Sender) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.InterBrokerListener == "" {
		cfg.InterBrokerListener = "PLAINTEXT"
	}
	if cfg.LeaderImbalanceCheckInterval <= 0 {
		cfg.LeaderImbalanceCheckInterval = 300 * time.Second
	}
	c := &Controller{cfg: cfg, st: st, sender: sender, log: cfg.Logger.With("component", "controller"), wake: make(chan struct{}, 1)}
	c.activeID.Store(-1)
	return c
}

// ActiveID is the id of the active controller as this broker knows it, -1 if none.
func (c *Controller) ActiveID() int32 { return c.activeID.Load() }

// IsActive reports whether this broker is the active controller.
func (c *Controller) IsActive() bool { return c.active.Load() }

// post records an event for the loop without ever blocking.
func (c *Controller) post(f func(p *pendingEvents)) {
	c.mu.Lock()
	f(&c.pending)
	c.mu.Unlock()
	c.notify()
}

// notify tells the loop that events are pending.
func (c *Controller) notify() {
	if c.env != nil {
		c.env.Wake()
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// forward turns a one-shot watch into a pending event: on a goroutine
// that ends with ctx, or, stepped, through the Env, for this term only.
func (c *Controller) forward(ctx context.Context, ch <-chan store.Event, f func(p *pendingEvents)) {
	fire := func(ev store.Event) {
		c.post(func(p *pendingEvents) {
			if ev.Type == store.EventNotWatching {
				p.sessionLost = true
			} else {
				f(p)
			}
		})
	}
	if c.env != nil {
		term := c.term
		c.env.Watch(ch, func(ev store.Event) {
			if c.term == term {
				fire(ev)
			}
		})
		return
	}
	go func() {
		select {
		case <-ctx.Done():
		case ev := <-ch:
			fire(ev)
		}
	}()
}

// runActive is the event loop of an elected controller: StartTerm, then
// a Step whenever events are pending.
func (c *Controller) runActive(ctx context.Context) error {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := c.StartTerm(actx); err != nil {
		return err
	}
	var rebalance <-chan time.Time
	if c.cfg.AutoLeaderRebalanceEnable {
		t := time.NewTicker(c.cfg.LeaderImbalanceCheckInterval)
		defer t.Stop()
		rebalance = t.C
	}
	for {
		select {
		case <-actx.Done():
			return nil
		case <-rebalance:
			c.post(func(p *pendingEvents) { p.rebalance = true })
			continue
		case <-c.wake:
		}
		if err := c.Step(actx); err != nil {
			return err
		}
	}
}

func (c *Controller) handle(ctx context.Context, p pendingEvents) error {
	if p.sessionLost {
		for _, f := range p.calls {
			f(ctx, false)
		}
		return store.ErrSessionExpired
	}
	// Calls first: they have waiting callers, and a later failure must not drop them.
	for _, f := range p.calls {
		f(ctx, true)
	}
	if err := c.loopErr; err != nil {
		c.loopErr = nil
		return err
	}
	if p.controller {
		if err := c.watchControllerNode(ctx); err != nil {
			return err
		}
	}
	if p.seedChecked != nil {
		if err := c.onSeedCheck(ctx, p.seedChecked); err != nil {
			return err
		}
	}
	for id := range p.brokerModified {
		delete(c.brokerWatches, id) // fired: re-armed by the reload
	}
	if p.brokers || len(p.brokerModified) > 0 {
		if err := c.reloadBrokers(ctx); err != nil {
			return err
		}
	}
	if p.topics {
		if err := c.reloadTopics(ctx); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(p.topicData) {
		if err := c.reloadTopic(ctx, name); err != nil {
			return err
		}
	}
	if p.configChanges {
		if err := c.processConfigChanges(ctx); err != nil {
			return err
		}
	}
	if p.logDirEvents {
		if err := c.processLogDirEvents(ctx); err != nil {
			return err
		}
	}
	if p.isrChanges {
		if err := c.processIsrChanges(ctx); err != nil {
			return err
		}
	}
	if p.zkPreferredElection {
		c.prefElectArmed = false
		if err := c.processZkPreferredElection(ctx); err != nil {
			return err
		}
	}
	if len(p.offlineReplicas) > 0 {
		if err := c.processOfflineReplicas(ctx, p.offlineReplicas); err != nil {
			return err
		}
	}
	if len(p.stopReplica) > 0 {
		if err := c.onStopReplicaResults(ctx, p.stopReplica); err != nil {
			return err
		}
	}
	if p.rebalance {
		if err := c.rebalanceLeaders(ctx); err != nil {
			return err
		}
	}
	if p.zkReassign {
		c.zkReassignArmed = false
		if _, err := c.processZkReassignment(ctx); err != nil {
			return err
		}
	}
	if p.deletions {
		c.deletionsArmed = false
	}
	if p.deletions || p.brokers || c.recheckDeletions {
		c.recheckDeletions = false
		if err := c.processDeletions(ctx); err != nil {
			return err
		}
	}
	return nil
}

// failed records an error met while serving a call.
func (c *Controller) failed(err error) {
	if c.loopErr == nil {
		c.loopErr = err
	}
}

func (c *Controller) resync(ctx context.Context) error {
	c.resetState()
	if err := c.load(ctx); err != nil {
		return err
	}
	if err := c.execute(ctx, c.state.OnElected()); err != nil {
		return err
	}
	if err := c.initializeReassignments(ctx); err != nil {
		return err
	}
	if err := c.processIsrChanges(ctx); err != nil {
		return err
	}
	if err := c.processZkPreferredElection(ctx); err != nil {
		return err
	}
	return c.processDeletions(ctx)
}

// resetState forgets the term's cluster state and broker channels, for a
// load from scratch: nothing is seeded, and a read-back of seeded states
// still in flight is dropped.
func (c *Controller) resetState() {
	for id, bc := range c.channels {
		bc.stop()
		delete(c.channels, id)
	}
	c.state = c.newState(c.state.Epoch)
	c.deletions = map[string]*deletion{}
	c.brokerWatches = map[int32]bool{}
	c.seeding, c.seeded, c.seedPending = false, nil, nil
}

// watchControllerNode checks that /controller is still ours and re-arms its watch.
func (c *Controller) watchControllerNode(ctx context.Context) error {
	_, stat, ch, err := c.st.GetW(ctx, ControllerPath)
	if errors.Is(err, store.ErrNoNode) {
		return fmt.Errorf("%w: %s deleted", errLostControl, ControllerPath)
	}
	if err != nil {
		return err
	}
	if stat.EphemeralOwner != c.st.SessionID() {
		return fmt.Errorf("%w: %s owned by session %d", errLostControl, ControllerPath, stat.EphemeralOwner)
	}
	c.forward(ctx, ch, func(p *pendingEvents) { p.controller = true })
	return nil
}

// load reads brokers, topics and partition states into c.state, arming watches.
func (c *Controller) load(ctx context.Context) error {
	if err := EnsureTopLevelPaths(ctx, c.st); err != nil {
		return err
	}
	// Watched before the configs are read, so no change falls in between.
	if _, err := c.watchConfigChanges(ctx, true); err != nil {
		return err
	}
	if err := c.loadUncleanDefault(ctx); err != nil {
		return err
	}
	live, err := c.watchBrokers(ctx)
	if err != nil {
		return err
	}
	c.state.Live = live
	c.syncChannels(ctx)
	names, _, ch, err := c.st.ChildrenW(ctx, TopicsPath)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	c.forward(ctx, ch, func(p *pendingEvents) { p.topics = true })
	_, err = c.loadTopics(ctx, names)
	return err
}

func (c *Controller) watchBrokers(ctx context.Context) (map[int32]BrokerInfo, error) {
	ids, _, ch, err := c.st.ChildrenW(ctx, BrokerIDsPath)
	if err != nil {
		return nil, fmt.Errorf("list brokers: %w", err)
	}
	c.forward(ctx, ch, func(p *pendingEvents) { p.brokers = true })
	// Data watches first, so that no change between them and the read
	// goes unnoticed.
	if c.brokerWatches == nil {
		c.brokerWatches = map[int32]bool{}
	}
	for _, s := range ids {
		id, err := strconv.ParseInt(s, 10, 32)
		if err != nil || c.brokerWatches[int32(id)] {
			continue
		}
		_, _, bch, err := c.st.GetW(ctx, BrokerPath(int32(id)))
		if errors.Is(err, store.ErrNoNode) {
			continue // gone already: the children watch reports it
		}
		if err != nil {
			return nil, fmt.Errorf("watch broker %d: %w", id, err)
		}
		c.brokerWatches[int32(id)] = true
		c.forward(ctx, bch, func(p *pendingEvents) {
			if p.brokerModified == nil {
				p.brokerModified = map[int32]bool{}
			}
			p.brokerModified[int32(id)] = true
		})
	}
	infos, err := readBrokers(ctx, c.st, ids)
	if err != nil {
		return nil, err
	}
	live := map[int32]BrokerInfo{}
	for _, b := range infos {
		live[b.ID] = b
	}
	return live, nil
}

// syncChannels starts a channel for each live broker and stops the others;
// a restarted broker (new epoch) gets a fresh channel, dropping requests
// meant for its previous incarnation.
func (c *Controller) syncChannels(ctx context.Context) {
	for id, bc := range c.channels {
		if _, ok := c.state.Live[id]; !ok {
			bc.stop()
			delete(c.channels, id)
		}
	}
	for id := range c.state.Live {
		if _, ok := c.channels[id]; !ok {
			c.channels[id] = c.newChannel(ctx, id)
		}
	}
}

func (c *Controller) reloadBrokers(ctx context.Context) error {
	live, err := c.watchBrokers(ctx)
	if err != nil {
		return err
	}
	// Restarted brokers need fresh channels: stop those whose epoch changed.
	gone := map[int32]bool{}
	for id, b := range c.state.Live {
		nb, ok := live[id]
		if ok && nb.Epoch == b.Epoch {
			continue
		}
		gone[id] = true
		if bc := c.channels[id]; ok && bc != nil {
			bc.stop()
			delete(c.channels, id)
		}
	}
	// A StopReplica queued for a broker that died or restarted will never
	// be answered: such deletions start over (processDeletions runs next).
	for _, d := range c.deletions {
		for id := range d.waiting {
			if gone[id] {
				d.eligible = false
			}
		}
	}
	acts := c.state.OnBrokersChange(live)
	c.syncChannels(ctx)
	return c.execute(ctx, acts)
}

func (c *Controller) reloadTopics(ctx context.Context) error {
	names, _, ch, err := c.st.ChildrenW(ctx, TopicsPath)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	c.forward(ctx, ch, func(p *pendingEvents) { p.topics = true })
	present := map[string]bool{}
	var unknown []string
	for _, name := range names {
		present[name] = true
		if _, known := c.state.Topics[name]; !known {
			unknown = append(unknown, name)
		}
	}
	added, err := c.loadTopics(ctx, unknown)
	if err != nil {
		return err
	}
	for name := range c.state.Topics {
		if !present[name] {
			c.state.OnTopicDeleted(name)
			delete(c.deletions, name)
		}
	}
	return c.execute(ctx, c.state.OnNewPartitions(added))
}

func (c *Controller) reloadTopic(ctx context.Context, name string) error {
	// Unknown topics are loaded too: one skipped as unreadable may have
	// been repaired. A deleted one reads as absent.
	added, err := c.loadTopic(ctx, name)
	if err != nil {
		return err
	}
	return c.execute(ctx, c.state.OnNewPartitions(added))
}

func sortedKeys[K int32 | string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
