package sim

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/group"
	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/replica"
	"github.com/brook-mq/brook/txn"
)

// Config is one simulation run.
type Config struct {
	Seed       int64
	Brokers    int32
	Partitions int32
	// MinISR is min.insync.replicas; the topic's replication factor is Brokers.
	MinISR int
	// Duration of the faulty phase in virtual time; a quiet phase of
	// Settle follows, with every broker up and every link healed.
	Duration, Settle time.Duration
	Net              NetConfig
	SessionTimeout   time.Duration // zookeeper.session.timeout.ms
	LagMax           time.Duration // replica.lag.time.max.ms
	// Faults are reverted fixes of the real code (replica.Faults).
	Faults replica.Faults
	// Groups is the number of consumer groups committing offsets through
	// the real group coordinator (groups.go); 0 runs no coordinator and
	// no offsets partition.
	Groups int
	// NoSimpleConsumers leaves the simple consumers out of the group
	// workload (a test of the membership checks alone).
	NoSimpleConsumers bool
	// GroupFaults are reverted fixes of the group coordinator.
	GroupFaults group.Faults
	// Transactions is the number of transactional producers (txn.go),
	// through the real transaction coordinator on the topic's last
	// partition (txn_coordinator.go); with Groups only when TxnOffsets.
	Transactions int
	// TxnOffsets: the transactional producers commit offsets in their
	// transactions (txn_offsets.go); it needs Groups and Transactions,
	// and __transaction_state moves to a partition after the offsets one.
	TxnOffsets bool
	// TxnFaults are reverted fixes of the transaction coordinator.
	TxnFaults txn.Faults
	// Consumers runs a read_uncommitted and a read_committed consumer on
	// each producer partition (consumers.go).
	Consumers bool
	// ConsumerFaults are modelled read-path bugs for tests.
	ConsumerFaults ConsumerFaults
	// ControlledShutdowns makes half the broker stops controlled
	// shutdowns (shutdown.go) instead of crashes.
	ControlledShutdowns bool
	// ShutdownWritesLost: the controller answers a controlled shutdown
	// without performing its decision (a driver bug, for a test).
	ShutdownWritesLost bool
	// TopicChurn creates and deletes a second topic while producing to
	// it (topics.go).
	TopicChurn bool
	// StopReplicaKeepsLogs: brokers stop deleted partitions without
	// deleting their logs (a bug, for a test).
	StopReplicaKeepsLogs bool
	// Membership runs consumers that join, sync, heartbeat, commit and
	// leave a group (membership.go); it needs Groups.
	Membership bool
	// Reassignments runs an admin that reassigns the producer
	// partitions (reassign.go).
	Reassignments bool
	// IdemRetryNewSequence: the idempotent producer gives a batch it
	// sends again a new sequence (a client bug, for a test), so the
	// leader cannot see the retry is a duplicate (idempotent.go).
	IdemRetryNewSequence bool
	// ControllerFaults are reverted fixes of the controller's decisions.
	ControllerFaults controller.Faults
	// Dir holds the brokers' log directories: on the simulated disk
	// (fs.go), or on the real one with RealDisk, where a crash keeps every
	// byte written.
	Dir      string
	RealDisk bool
}

// DefaultConfig is the run `make test` does for each seed. Even seeds
// also run the group workload (its offsets partition and consumers cost
// half as much again per seed); odd seeds run transactional producers and
// consumers at both isolation levels instead.
func DefaultConfig(seed int64, dir string) Config {
	groups, txns := 0, 0
	if seed%2 == 0 {
		groups = 3
	} else {
		txns = 2
	}
	txnOffsets := seed%4 == 1
	if txnOffsets {
		groups = 3
	}
	return Config{
		Seed: seed, Brokers: 3, Partitions: 2, MinISR: 2,
		Duration: 20 * time.Second, Settle: 12 * time.Second,
		Net:            NetConfig{MinDelay: time.Millisecond, MaxDelay: 30 * time.Millisecond, Drop: 0.05, Duplicate: 0.02},
		SessionTimeout: 6 * time.Second, LagMax: 3 * time.Second,
		Groups: groups, Transactions: txns, TxnOffsets: txnOffsets, Consumers: txns > 0, ControlledShutdowns: true, TopicChurn: seed%4 == 3, Membership: groups > 0 && !txnOffsets, Reassignments: seed%3 == 0,
		Dir: dir,
	}
}

const (
	topic      = "sim"
	clientNode = 100 // the producer's node on the network
	zkNode     = -1  // ZooKeeper's node for partitions
)

// Cluster is the simulated cluster.
type Cluster struct {
	cfg     Config
	sched   *Scheduler
	zk      *ZK
	net     *Net
	admin   *ZKSession
	brokers []*Broker
	inv     *invariants
	// idem is the idempotent producer (idempotent.go).
	idem *idemProducer
	// quiet: the faulty phase is over.
	quiet bool
	// watches are one-shot store watches waiting to become events; the
	// embedded tree fills them during the call that fires them, and pump
	// turns them into events in the order they were set.
	watches []watchHook
	failure error
	// assignment caches the topic's stored assignment until the next
	// write (isReplica).
	assignment struct {
		writes uint64
		read   bool
		a      controller.TopicAssignment
	}
	crashes int
	// shutdowns counts clean stops (shutdown.go).
	shutdowns int
	// ineligible counts ISR changes the controller refused with
	// INELIGIBLE_REPLICA (replication.go).
	ineligible int
	// txns and cons are the transactional and consumer workloads, or nil.
	txns     *txnWorkload
	cons     *consumerWorkload
	topics   *topicWorkload
	members  *membershipWorkload
	reassign *reassignWorkload
}

// Broker is one simulated broker; its incarnation changes with each restart.
type Broker struct {
	c           *Cluster
	id          int32
	dir         string
	disk        *FS // nil with RealDisk
	up          bool
	incarnation int
	logs        *log.Manager
	// recovered: logs were reopened from the disk after a crash, as the
	// next start finds them (the invariants read what the disk kept).
	recovered bool
	// beforeCrash are the logs as the last power failure found them: what
	// the broker had received, which a leader that has not heard of the
	// crash still counts (durability.go).
	beforeCrash *log.Manager
	// earlierCrashes are the logs as the power failures before the last
	// found them: a leader that heard of none of them (the incarnations
	// between never fetched, so no fetch showed it a new broker epoch)
	// still counts what the first received (seed 897).
	earlierCrashes []*log.Manager
	rm             *replica.Manager
	sess           *ZKSession
	registered     bool
	// brokerEpoch is the registration's czxid (the broker epoch).
	brokerEpoch int64
	// shuttingDown: a controlled shutdown is under way.
	shuttingDown bool
	// knownController is the controller that last sent this broker a
	// LeaderAndISR; AlterPartition goes there, as a broker's metadata says.
	knownController int32
	// controllerEpoch is the highest controller epoch seen (broker's controllerFence).
	controllerEpoch int32
	// meta is the broker's metadata cache: the partition states of the
	// UpdateMetadata requests it was sent (metadata_cache.go).
	meta     map[string]*topicCache
	ctrl     *simController // controller_driver.go
	fetch    map[int32]*followerFetch
	sessions leaderSessions
	// stepLog is the real follower steps' logger, into the trace.
	stepLog *slog.Logger
	// coord is the real group coordinator; appends and commits are its
	// writes waiting for the offsets partition's HW (groups.go).
	coord   *group.Coordinator
	appends []pendingAppend
	commits []pendingCommit
	// tickAt is when the coordinator's next deadline is due (zero: at
	// once, a request may have set an earlier one); membership.go.
	tickAt time.Time
}

// New builds the cluster; Run runs it.
func New(cfg Config) *Cluster {
	s := NewScheduler(cfg.Seed)
	c := &Cluster{cfg: cfg, sched: s, zk: NewZK(s), net: NewNet(s, cfg.Net)}
	c.inv = newInvariants(c)
	c.idem = newIdemProducer(c)
	if cfg.Transactions > 0 {
		c.txns = newTxnWorkload(c)
	}
	if cfg.Consumers {
		c.cons = newConsumerWorkload(c)
	}
	if cfg.TopicChurn {
		c.topics = newTopicWorkload(c)
	}
	if cfg.Membership && cfg.Groups > 0 {
		c.members = newMembershipWorkload(c)
	}
	if cfg.Reassignments {
		c.reassign = newReassignWorkload(c)
	}
	for id := int32(1); id <= cfg.Brokers; id++ {
		b := &Broker{c: c, id: id, dir: filepath.Join(cfg.Dir, fmt.Sprintf("broker-%d", id)), knownController: -1}
		b.stepLog = slog.New(traceHandler{b})
		if !cfg.RealDisk {
			b.disk = NewFS(cfg.Seed*1_000_003+int64(id), s.Now)
		}
		c.brokers = append(c.brokers, b)
	}
	return c
}

// Stats counts what a run did, so that a passing run shows it did something.
type Stats struct {
	Events, Acked, LeaderEpochs, Crashes, Shutdowns, Commits int
	// TxnCommitted and TxnAborted count decided transactions;
	// ConsumerRecords counts records delivered to consumers.
	TxnCommitted, TxnAborted, ConsumerRecords int
	// TxnGivenUp counts transactions given up late in the quiet phase
	// before their partitions were added.
	TxnGivenUp int
	// TxnAbortsAwaited counts the producers whose given-up transaction,
	// opened at the coordinator, the final checks waited for the
	// coordinator's timeout to abort (txnWorkload.awaitsTimeoutAbort).
	TxnAbortsAwaited int
	// TopicsCreated and TopicsDeleted count the churn topic's incarnations.
	TopicsCreated, TopicsDeleted int
	// Joins counts successful JoinGroups, MemberCommits the members'
	// acknowledged commits.
	Joins, MemberCommits int
	// Lost counts the acknowledged records (and offsets partition
	// prefixes) that power failures took from every live ISR member
	// (durability.go).
	Lost int
	// ReadsLost counts the consumers' deliveries of records lost since
	// (or that were lost already) as Kafka loses them (reads_lost.go).
	ReadsLost int
	// TxnStateLosses counts the power failures that took records of
	// __transaction_state as Kafka loses them (txnWorkload.stateLost).
	TxnStateLosses int
	// Reassignments counts the reassignments requested, and
	// ReassignmentsDone those seen in progress and then completed.
	Reassignments, ReassignmentsDone int
	// ReassignCancels and ReassignReplaced count the acknowledged cancels
	// and replacements of reassignments in progress (reassign_change.go).
	ReassignCancels, ReassignReplaced int
	// ReassignCancelsMoot counts cancels answered NO_REASSIGNMENT_IN_PROGRESS.
	ReassignCancelsMoot int
	// TxnOffsetsVisible counts the transactional offset commits seen
	// made visible by their commit marker, TxnOffsetsUnstable the checked
	// require_stable fetches answered UNSTABLE_OFFSET_COMMIT (txn_offsets.go).
	TxnOffsetsVisible, TxnOffsetsUnstable int
	// Retries counts the idempotent producer's batches sent again,
	// Duplicates the appends answered as duplicates, EpochBumps its epoch
	// bumps after a sequence error (idempotent.go).
	Retries, Duplicates, EpochBumps int
	// DupsBelowMinISR counts duplicates answered with a record
	// acknowledged before, when fewer than min.insync.replicas replicas
	// held it any more (invariants.checkAcks).
	DupsBelowMinISR int
	// IneligibleISRChanges counts ISR changes the controller refused with
	// INELIGIBLE_REPLICA: a member not online or, with KIP-903's broker
	// epochs, registered again since the leader heard from it.
	IneligibleISRChanges int
}

// Stats reports the run's counts.
func (c *Cluster) Stats() Stats {
	acked := 0
	for _, a := range c.inv.acked {
		acked += len(a)
	}
	st := Stats{Events: c.sched.Steps(), Acked: acked, LeaderEpochs: len(c.inv.leaders), Crashes: c.crashes, Shutdowns: c.shutdowns, Commits: c.inv.commitsAcked, Lost: c.inv.lostRecords}
	st.Retries, st.Duplicates, st.EpochBumps = c.idem.retries, c.idem.duplicates, c.idem.bumps
	st.DupsBelowMinISR, st.IneligibleISRChanges = c.inv.dupsBelowMinISR, c.ineligible
	if c.txns != nil {
		st.TxnCommitted, st.TxnAborted, st.TxnStateLosses = c.txns.committed, c.txns.aborted, c.txns.stateLosses
		st.TxnGivenUp, st.TxnAbortsAwaited = c.txns.givenUp, c.txns.abortsAwaited
		if o := c.txns.offs; o != nil {
			st.TxnOffsetsVisible, st.TxnOffsetsUnstable = o.made, o.unstable
		}
	}
	if c.cons != nil {
		st.ConsumerRecords, st.ReadsLost = c.cons.records, c.cons.readsLost
	}
	if c.topics != nil {
		st.TopicsCreated, st.TopicsDeleted = c.topics.created, c.topics.deleted
	}
	if c.members != nil {
		st.Joins, st.MemberCommits = c.members.joins, c.members.commits
	}
	if c.reassign != nil {
		st.Reassignments, st.ReassignmentsDone = c.reassign.requested, c.reassign.completed
		st.ReassignCancels, st.ReassignReplaced = c.reassign.cancels, c.reassign.replaced
		st.ReassignCancelsMoot = c.reassign.cancelsMoot
	}
	return st
}

// Scheduler is the run's scheduler (for its trace).
func (c *Cluster) Scheduler() *Scheduler { return c.sched }

// Run runs the simulation and returns the first invariant violation.
func (c *Cluster) Run() error {
	defer c.shutdown()
	ctx := context.Background()
	c.admin = c.zk.Connect(time.Hour)
	assignment := map[int32][]int32{}
	for p := range c.numParts() {
		var rs []int32
		for i := range c.cfg.Brokers {
			rs = append(rs, (p+i)%c.cfg.Brokers+1)
		}
		assignment[p] = rs
	}
	if err := controller.EnsureTopLevelPaths(ctx, c.admin); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	res := controller.CreateTopics(ctx, c.admin, []controller.TopicSpec{{Name: topic, NumPartitions: -1, ReplicationFactor: -1, Assignment: assignment}}, false)
	if res[0].ErrorCode != 0 {
		return fmt.Errorf("setup: create topic: error %d: %s", res[0].ErrorCode, res[0].ErrorMessage)
	}
	if c.reassign != nil {
		c.zk.afterWrite = c.reassign.step // each of a controller step's writes
	}
	for _, b := range c.brokers {
		c.sched.After(c.sched.Between(0, 500*time.Millisecond), fmt.Sprintf("start broker %d", b.id), b.start)
	}
	c.scheduleFaults()
	c.idem.schedule()
	c.scheduleGroups()
	if c.txns != nil {
		c.txns.schedule()
	}
	if c.cons != nil {
		c.cons.schedule()
	}
	if c.topics != nil {
		c.topics.schedule()
	}
	if c.members != nil {
		c.members.schedule()
	}
	if c.reassign != nil {
		c.reassign.schedule()
	}
	end := simStart.Add(c.cfg.Duration)
	c.sched.After(c.cfg.Duration, "quiet: heal, restart all", c.beginQuiet)
	for c.failure == nil && c.sched.Step() {
		c.pump()
		c.stepGroups()
		if c.members != nil {
			c.members.step()
		}
		if c.txns != nil {
			c.txns.step()
		}
		c.inv.check()
		if c.reassign != nil {
			c.reassign.step()
		}
		if now := c.sched.Now(); now.After(end.Add(c.cfg.Settle)) {
			if c.txns == nil || !c.txns.awaitsTimeoutAbort() || now.After(end.Add(c.cfg.Settle+timeoutAbortWait)) {
				break
			}
		}
	}
	if c.failure == nil {
		c.inv.final()
	}
	if c.failure == nil {
		c.idem.final()
	}
	if c.failure == nil {
		c.finalGroups()
	}
	if c.failure == nil && c.txns != nil {
		c.txns.final()
	}
	if c.failure == nil && c.cons != nil {
		c.cons.final()
	}
	if c.failure == nil && c.topics != nil {
		c.topics.final()
	}
	if c.failure == nil && c.members != nil {
		c.members.final()
	}
	if c.failure == nil && c.reassign != nil {
		c.reassign.final()
	}
	return c.failure
}

// numParts is the topic's partition count: the producer's partitions,
// then the offsets partition when groups run, or the transaction state
// partition when transactions do, or both (TxnOffsets).
func (c *Cluster) numParts() int32 {
	switch {
	case c.cfg.TxnOffsets:
		return c.cfg.Partitions + 2
	case c.cfg.Groups > 0 || c.cfg.Transactions > 0:
		return c.cfg.Partitions + 1
	}
	return c.cfg.Partitions
}

// offsetsPart is the partition the group coordinator appends to.
func (c *Cluster) offsetsPart() int32 { return c.cfg.Partitions }

// fail records the first invariant violation; the run stops after this event.
func (c *Cluster) fail(format string, args ...any) {
	if c.failure == nil {
		c.failure = fmt.Errorf(format, args...)
		c.sched.Tracef("INVARIANT VIOLATED: %v", c.failure)
	}
}

func (c *Cluster) shutdown() {
	for _, b := range c.brokers {
		if b.up {
			b.stop(false)
		}
	}
}

// simLogConfig is the brokers' log config: Kafka's defaults but
// index.interval.bytes=0, an offset index entry for every batch, so that a
// fetch finds its batch with one read rather than scanning from an entry
// up to 4 KiB before it (the batches are small and reads are most of a
// seed's file system calls). Which batch a read returns is the same.
func simLogConfig() log.Config {
	cfg := log.DefaultConfig()
	cfg.IndexIntervalBytes = 0
	return cfg
}

// live reports whether the broker incarnation is still running.
func (b *Broker) live(inc int) bool { return b.up && b.incarnation == inc }

func (b *Broker) start() {
	if b.up {
		return
	}
	b.incarnation++
	inc := b.incarnation
	now := b.c.sched.Now
	if !b.recovered {
		logs, err := b.openLogs()
		if err != nil {
			b.c.fail("broker %d: open logs: %v", b.id, err)
			return
		}
		b.logs = logs
	}
	b.recovered = false
	logs := b.logs
	// A new process knows no broker epoch until it registers (the
	// broker's is zero until then, sent as -1); after a session expiry it
	// keeps the old one until it registered again, as the broker's.
	b.brokerEpoch = 0
	b.rm = replica.NewManager(replica.Config{
		LocalID: b.id, Logs: logs, ConfigFor: func(string) log.Config { return simLogConfig() },
		BrokerEpoch: func() int64 { return b.brokerEpoch },
		Cluster:     &brokerCluster{b: b, inc: inc}, ReplicaLagTimeMax: b.c.cfg.LagMax, Now: now,
		Logger: slog.New(slog.DiscardHandler), Faults: b.c.cfg.Faults, FetchBackoff: fetchBackoff,
		Listener: coordListener{b: b, inc: inc},
	})
	b.coord = b.newCoordinator()
	b.appends, b.commits, b.tickAt = nil, nil, time.Time{}
	b.up, b.registered, b.ctrl, b.knownController, b.controllerEpoch, b.shuttingDown = true, false, nil, -1, 0, false
	b.meta = nil // a new process's cache is empty
	b.fetch = map[int32]*followerFetch{}
	b.sess = b.c.zk.Connect(b.c.cfg.SessionTimeout)
	b.c.sched.Tracef("broker %d up (incarnation %d, zk session %d)", b.id, inc, b.sess.SessionID())
	b.register(inc)
	b.tick(inc)
}

// register creates the broker's ephemeral registration, retrying while a
// previous incarnation's session still holds it (Brook waits for it too).
func (b *Broker) register(inc int) {
	if !b.live(inc) {
		return
	}
	info := controller.BrokerInfo{ID: b.id, Endpoints: []controller.Endpoint{{Name: "PLAINTEXT", Host: fmt.Sprintf("b%d", b.id), Port: 9092, SecurityProtocol: "PLAINTEXT"}}}
	epoch, err := controller.RegisterBroker(context.Background(), b.sess, info)
	if err != nil {
		b.c.sched.Tracef("broker %d: %v", b.id, err)
		b.c.sched.After(500*time.Millisecond, fmt.Sprintf("~broker %d register again", b.id), func() { b.register(inc) })
		return
	}
	b.registered, b.brokerEpoch = true, epoch
	b.c.sched.Tracef("broker %d registered", b.id)
	b.standForController(inc)
}

// tick is the broker's periodic work: the ISR checks and sender of
// replica.Manager.Run, follower fetching, and noticing an expired session.
func (b *Broker) tick(inc int) {
	if !b.live(inc) {
		return
	}
	if b.sess.Expired() {
		// Brook's zkSession: a new session, registered again.
		if b.ctrl != nil {
			b.ctrl.stop()
			b.ctrl = nil
		}
		b.sess = b.c.zk.Connect(b.c.cfg.SessionTimeout)
		b.registered = false
		b.c.sched.Tracef("broker %d new zk session %d", b.id, b.sess.SessionID())
		b.register(inc)
	}
	b.rm.CheckISRs()
	b.rm.SendISRChanges(context.Background())
	b.fetchAll(inc)
	b.c.sched.After(b.c.sched.Between(50*time.Millisecond, 150*time.Millisecond), fmt.Sprintf("~broker %d tick", b.id), func() { b.tick(inc) })
}

// openLogs opens the broker's log dirs, recovering what a crash left.
func (b *Broker) openLogs() (*log.Manager, error) {
	cfg := log.ManagerConfig{Dirs: []string{b.dir}, BrokerID: b.id, ClusterID: "sim", Now: b.c.sched.Now}
	if b.disk != nil {
		cfg.FS = b.disk.Mount()
	}
	return log.OpenManager(cfg, func(log.TopicPartition) log.Config { return simLogConfig() })
}

// crash stops the broker without a clean shutdown: the next start recovers
// its logs. On the simulated disk it is a power failure (unsynced writes
// lost, the last one maybe torn) or a process crash (the page cache keeps
// everything), and the logs are recovered at once, as the next start
// finds them.
func (b *Broker) crash() { b.stop(true) }

func (b *Broker) stop(reopen bool) {
	if !b.up {
		return
	}
	b.c.crashes++
	b.halt()
	b.sess.SetConnected(false)
	if b.disk != nil {
		b.crashDisk(reopen)
		return
	}
	b.c.sched.Tracef("broker %d crash", b.id)
	if err := b.logs.Close(); err != nil {
		b.c.fail("broker %d: close logs: %v", b.id, err)
	}
	// Closing wrote the clean-shutdown marker; a crash leaves none.
	if err := os.Remove(filepath.Join(b.dir, ".kafka_cleanshutdown")); err != nil && !os.IsNotExist(err) {
		b.c.fail("broker %d: %v", b.id, err)
	}
}

// halt stops what runs on the broker, for a crash or a clean stop.
func (b *Broker) halt() {
	if b.ctrl != nil {
		b.ctrl.stop()
		b.ctrl = nil
	}
	b.up, b.shuttingDown = false, false
	b.coord.Close()
	b.appends, b.commits = nil, nil
}

// pump turns fired store watches into events.
func (c *Cluster) pump() {
	kept := c.watches[:0]
	var fired []watchHook
	for _, w := range c.watches {
		select {
		case ev := <-w.ch:
			w.ev = ev
			fired = append(fired, w)
		default:
			kept = append(kept, w)
		}
	}
	c.watches = kept
	for _, w := range fired {
		c.sched.After(0, "watch "+w.name+" "+w.ev.Type.String(), func() { w.fn(w.ev) })
	}
}

// crashDisk crashes the broker's simulated disk under its running logs,
// which are dropped without a word (every file handle is dead), then
// recovers them from what the disk kept when reopen is set.
func (b *Broker) crashDisk(reopen bool) {
	if !reopen { // the run is over: the handles die, nothing is drawn
		b.disk.Crash(false)
		b.logs = nil
		return
	}
	power := b.disk.DrawPowerFailure()
	b.disk.Crash(power)
	if power {
		lost, torn := b.disk.LastCrash()
		b.c.sched.Tracef("broker %d crash: power failure, %d unsynced bytes lost, %d writes torn", b.id, lost, torn)
		if b.beforeCrash != nil {
			b.earlierCrashes = append(b.earlierCrashes, b.beforeCrash)
		}
		b.beforeCrash = b.logs
	} else {
		b.c.sched.Tracef("broker %d crash: process", b.id)
	}
	b.logs = nil
	logs, err := b.openLogs()
	if err != nil {
		b.c.fail("broker %d: recover logs after crash: %v", b.id, err)
		return
	}
	b.logs, b.recovered = logs, true
	if power {
		b.c.inv.lostByCrash()
	}
}
