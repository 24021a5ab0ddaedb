// Package broker serves the Kafka protocol: listeners, one read loop per
// connection, one handler file per API key (NN_name.go, numbered by key),
// and the metadata cache that the controller keeps current.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/controller/store"
	"github.com/brook-mq/brook/controller/zkstore"
	"github.com/brook-mq/brook/group"
	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/logging"
	"github.com/brook-mq/brook/metrics"
	"github.com/brook-mq/brook/protocol/batch"
	"github.com/brook-mq/brook/quota"
	"github.com/brook-mq/brook/replica"
	"github.com/brook-mq/brook/txn"
)

// Broker is one running Brook broker.
type Broker struct {
	cfg    *config.Broker
	logger *slog.Logger
	// loggers are the named loggers whose levels the BROKER_LOGGER
	// resource changes at runtime.
	loggers   *logging.Loggers
	handlers  map[int16]handler
	meta      *metadataCache
	clusterID string

	db          *store.DB
	store       controller.Store
	ctrl        *controller.Controller
	logs        *log.Manager
	replicas    *replica.Manager
	producerIDs *producerIDs
	topics      *topicConfigs
	// produceQuota, fetchQuota and requestQuota are the managers of
	// producer_byte_rate, consumer_byte_rate and request_percentage.
	produceQuota *quota.Manager
	fetchQuota   *quota.Manager
	requestQuota *quota.Manager
	// mutationQuotas is controller_mutation_rate's.
	mutationQuotas *quota.MutationManager
	// clientQuotas is the quota table the managers hold, owned by the
	// config watch (watchTopicConfigs), which patches it per change.
	clientQuotas quota.Table
	groups       *group.Coordinator
	// txnOffsets, when set, replaces the group coordinator as the hook for
	// markers written to __consumer_offsets (tests).
	txnOffsets txnOffsetsCompleter
	// alterPartitionTestHook, when set (tests only, before Run), stands
	// between the replica manager and the controller for AlterPartition:
	// send is the real request, so a test can let a change reach the
	// controller and lose its answer.
	alterPartitionTestHook func(ctx context.Context, req *kmsg.AlterPartitionRequest, send alterPartitionSend) (*kmsg.AlterPartitionResponse, error)
	txns                   *txn.Coordinator
	// codecs compress and decompress for validation, re-encoding and the
	// group coordinator; one pooled set for the whole broker.
	codecs *batch.Codecs
	peers  peers
	// features is what the broker learned of the others' versions
	// (cluster_features.go).
	features clusterFeatures
	// brokerEpoch is the czxid of this broker's registration, which the
	// controller uses to tell a restarted broker from its predecessor; it
	// changes when a new ZooKeeper session registers again.
	brokerEpoch atomic.Int64
	// zk is the ZooKeeper session in cluster mode (nil in single-node mode).
	zk      *zkSession
	fence   controllerFence
	dynamic dynamicConfigs

	// acls is the authorizer (nil: authorizer.class.name unset, all is
	// allowed); aclSync keeps it equal to the metadata store's ACLs.
	acls    *auth.Authorizer
	aclSync *auth.ACLSync
	// principalOf, when set (tests only, before Run), gives each accepted
	// connection its principal, standing in for TLS and SASL.
	principalOf func(net.Conn) auth.Principal

	listeners []boundListener
	// serverTLS is the TLS server of each listener that runs over TLS;
	// peerTLS the client side to other brokers (nil: plaintext).
	serverTLS map[string]*auth.ServerTLS
	peerTLS   *auth.ClientTLS
	quotas    *connQuotas
	// requests is queued.max.requests over all connections.
	requests *requestQueue
	// frames are the request frame buffers the connections read into.
	frames framePool
	// connBuffers are the read and write buffers connections borrow
	// while they read or write; idle ones hold none.
	connBuffers connBuffers
	// workers run the connections' appliers and writers (workers.go).
	workers *workers
	// sasl holds the mechanisms of each SASL listener, by name.
	sasl map[string]*saslListener
	// saslNow is the clock of SASL session lifetimes (tests replace it
	// before Run).
	saslNow func() time.Time
	// fetchSessions are the fetch sessions of consumers and followers
	// (KIP-227); fetchSessionNow is the clock of their ages (tests replace
	// it before Run).
	fetchSessions   *fetchSessions
	fetchSessionNow func() time.Time
	// metrics counts what the request path sees and reads the rest at
	// scrape time; metricsServer is brook.metrics.listener (nil when unset).
	metrics       *metrics.Registry
	metricsState  *metricsState
	metricsServer *metrics.Server
}

type boundListener struct {
	name string
	ln   net.Listener
	// tls is the listener's TLS server; nil for PLAINTEXT.
	tls *auth.ServerTLS
}

// New opens the broker's storage and metadata and binds its listeners, so
// that Addrs is known before Run. It serves nothing until Run.
func New(cfg *config.Broker, logger *slog.Logger) (_ *Broker, err error) {
	loggers := logging.Of(logger)
	logger = loggers.Logger("kafka.server")
	b := &Broker{cfg: cfg, logger: logger, loggers: loggers, meta: newMetadataCache()}
	b.peers.b = b
	b.handlers = b.handlerTable()
	b.fetchSessions, b.fetchSessionNow = newFetchSessions(cfg.MaxIncrementalFetchSessionCacheSlots), time.Now
	if err := b.setupSASL(); err != nil {
		return nil, err
	}
	if b.peers.mechanism, err = b.peerMechanism(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			b.closeStorage()
		}
	}()
	if err := b.setupTLS(); err != nil {
		return nil, err
	}
	ctx := context.Background()
	if err := b.openMetadataStore(); err != nil {
		return nil, err
	}
	if b.clusterID, err = controller.EnsureClusterID(ctx, b.store); err != nil {
		return nil, fmt.Errorf("cluster id: %w", err)
	}
	if err := b.resolveBrokerID(ctx); err != nil {
		return nil, err
	}
	if err := b.openAuthorizer(ctx); err != nil {
		return nil, err
	}
	cfg = b.cfg
	b.topics = newTopicConfigs(cfg)
	b.topics.load = func(topic string) (map[string]string, error) {
		return controller.TopicConfigs(context.Background(), b.store, topic)
	}
	if b.codecs, err = batch.NewCodecs(batch.CodecsConfig{}); err != nil {
		return nil, fmt.Errorf("compression codecs: %w", err)
	}
	// Dynamic broker configs set earlier apply before any log opens: they
	// may change topic defaults such as log.retention.ms.
	if err := b.reloadDynamicConfigs(ctx); err != nil {
		return nil, err
	}
	b.logs, err = log.OpenManager(log.ManagerConfig{
		Codecs:                             b.codecs,
		Dirs:                               cfg.LogDirs,
		BrokerID:                           cfg.BrokerID,
		ClusterID:                          b.clusterID,
		RetentionCheckInterval:             cfg.LogRetentionCheckInterval,
		FlushCheckInterval:                 time.Duration(cfg.LogFlushSchedulerIntervalMs) * time.Millisecond,
		FlushOffsetCheckpointInterval:      cfg.LogFlushOffsetCheckpointInterval,
		FlushStartOffsetCheckpointInterval: cfg.LogFlushStartOffsetCheckpointInterval,
		HighWatermarkCheckpointInterval:    cfg.ReplicaHighWatermarkCheckpointInterval,
		RecoveryThreads:                    int(cfg.NumRecoveryThreadsPerDataDir),
		MaxOpenFiles:                       int(cfg.LogOpenFilesMax),
		ProducerIDExpiration:               b.effectiveConfig().ProducerIDExpiration,
		Cleaner:                            cleanerConfig(b.effectiveConfig()),
		Now:                                time.Now,
		Logger:                             loggers.Logger("kafka.log"),
		OnDirFailure:                       func(dir string, tps []log.TopicPartition) { b.onLogDirFailure(dir, tps) },
	}, func(tp log.TopicPartition) log.Config { return b.topics.logConfig(tp.Topic) })
	if err != nil {
		return nil, fmt.Errorf("open logs: %w", err)
	}
	b.groups = group.New(group.Config{
		BrokerID:                      cfg.BrokerID,
		NumPartitions:                 cfg.OffsetsTopicNumPartitions,
		InitialRebalanceDelay:         cfg.GroupInitialRebalanceDelay,
		MinSessionTimeout:             cfg.GroupMinSessionTimeout,
		MaxSessionTimeout:             cfg.GroupMaxSessionTimeout,
		MaxGroupSize:                  cfg.GroupMaxSize,
		OffsetsRetention:              cfg.OffsetsRetention,
		OffsetsRetentionCheckInterval: cfg.OffsetsRetentionCheckInterval,
		OffsetMetadataMaxBytes:        cfg.OffsetMetadataMaxBytes,
		LoadBufferSize:                cfg.OffsetsLoadBufferSize,
		CommitTimeout:                 cfg.OffsetsCommitTimeout,
		Now:                           time.Now,
		Logger:                        loggers.Logger("kafka.coordinator.group"),
	})
	quotaWindow := quota.Window{Num: int(cfg.QuotaWindowNum), Size: cfg.QuotaWindowSize}
	b.produceQuota = quota.NewManager(quota.ProducerByteRate, quota.Config{Window: quotaWindow})
	b.fetchQuota = quota.NewManager(quota.ConsumerByteRate, quota.Config{Window: quotaWindow})
	// Kafka's ClientRequestQuotaManager bounds its throttle to one window.
	b.requestQuota = quota.NewManager(quota.RequestPercentage, quota.Config{Window: quotaWindow, MaxThrottle: quotaWindow.Size})
	b.mutationQuotas = quota.NewMutationManager(quota.Config{
		Window: quota.Window{Num: int(cfg.ControllerQuotaWindowNum), Size: cfg.ControllerQuotaWindowSize},
	})
	leaderQuota, followerQuota := replicationQuotas(cfg.LeaderReplicationThrottledRate, cfg.FollowerReplicationThrottledRate,
		cfg.ReplicationQuotaWindowNum, cfg.ReplicationQuotaWindowSize)
	b.replicas = replica.NewManager(replica.Config{
		LocalID: cfg.BrokerID, Logs: b.logs, ConfigFor: b.topics.logConfig, Listener: leadershipListener{b},
		Cluster:               replicationCluster{b},
		ReplicaLagTimeMax:     cfg.ReplicaLagTimeMax,
		FetchWaitMax:          cfg.ReplicaFetchWaitMax,
		FetchMinBytes:         cfg.ReplicaFetchMinBytes,
		FetchMaxBytes:         cfg.ReplicaFetchMaxBytes,
		FetchResponseMaxBytes: cfg.ReplicaFetchResponseMaxBytes,
		FetchBackoff:          cfg.ReplicaFetchBackoff,
		SocketTimeout:         cfg.ReplicaSocketTimeout,
		LeaderQuota:           leaderQuota,
		FollowerQuota:         followerQuota,
		ThrottledReplicas:     b.throttledReplicas,
		// Read at each fetch and ISR change: a new ZooKeeper session
		// registers again with a new epoch (register).
		BrokerEpoch: b.brokerEpoch.Load,
		Now:         time.Now,
		Logger:      loggers.Logger("kafka.server.ReplicaManager"),
	})
	b.producerIDs = &producerIDs{store: b.store, brokerID: cfg.BrokerID}
	b.txns = txn.New(txn.Config{
		NumPartitions:         cfg.TransactionStateLogNumPartitions,
		MaxTimeout:            cfg.TransactionMaxTimeout,
		IDExpiration:          cfg.TransactionalIDExpiration,
		AbortTimedOutInterval: cfg.TransactionAbortTimedOutCleanupInterval,
		RemoveExpiredInterval: cfg.TransactionRemoveExpiredCleanupInterval,
		LoadBufferSize:        cfg.TransactionStateLogLoadBufferSize,
		OffsetsNumPartitions:  cfg.OffsetsTopicNumPartitions,
		NewProducerID:         b.producerIDs.next,
		Markers:               markerSender{b},
		Now:                   time.Now,
		Logger:                loggers.Logger("kafka.coordinator.transaction"),
	})
	b.requests = newRequestQueue(cfg.QueuedMaxRequests, cfg.QueuedMaxRequestBytes)
	b.workers = newWorkers()
	protected := ""
	if len(cfg.Listeners) > 1 {
		protected = cfg.InterBrokerListenerName
	}
	b.quotas = newConnQuotas(protected, quota.Window{Num: int(cfg.QuotaWindowNum), Size: cfg.QuotaWindowSize}, func() connLimits {
		eff := b.effectiveConfig()
		return connLimits{maxConnections: eff.MaxConnections, perIP: eff.MaxConnectionsPerIP, overrides: eff.MaxConnectionsPerIPOverrides,
			creationRate: eff.MaxConnectionCreationRate, listenerCreationRate: eff.ListenerConnectionCreationRate}
	})
	if err := b.listenMetrics(); err != nil {
		return nil, err
	}
	for _, l := range cfg.Listeners {
		ln, err := net.Listen("tcp", l.Addr())
		if err != nil {
			b.closeListeners()
			return nil, fmt.Errorf("listen %s: %w", l, err)
		}
		b.listeners = append(b.listeners, boundListener{l.Name, sizedListener{ln, b}, b.serverTLS[l.Name]})
	}
	// A broker without ZooKeeper has no other broker to wait for.
	b.features.tv2.Store(cfg.ZookeeperConnect == "")
	return b, nil
}

// openMetadataStore connects to ZooKeeper when zookeeper.connect is set,
// and otherwise opens the embedded store in the first log dir: the same
// controller and broker code runs over either.
func (b *Broker) openMetadataStore() error {
	if b.cfg.ZookeeperConnect != "" {
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.ZookeeperConnectionTimeout+time.Second)
		defer cancel()
		zs, err := dialZKSession(ctx, zkstore.Options{
			Connect:        b.cfg.ZookeeperConnect,
			SessionTimeout: b.cfg.ZookeeperSessionTimeout,
			ConnectTimeout: b.cfg.ZookeeperConnectionTimeout,
			Logger:         b.loggers.Logger("kafka.zookeeper"),
		}, b.logger)
		if err != nil {
			return fmt.Errorf("connect to zookeeper %s: %w", b.cfg.ZookeeperConnect, err)
		}
		b.zk = zs
		b.store = zs
		return nil
	}
	if err := os.MkdirAll(b.cfg.LogDirs[0], 0o755); err != nil {
		return fmt.Errorf("create log dir: %w", err)
	}
	db, err := store.Open(store.Options{Dir: b.cfg.LogDirs[0], Logger: b.loggers.Logger("brook.store")})
	if err != nil {
		return fmt.Errorf("open embedded metadata store: %w", err)
	}
	b.db = db
	b.store = db.NewSession()
	return nil
}

// resolveBrokerID gives a broker configured with broker.id=-1 its id, as
// Kafka does: the one meta.properties recorded, or else a new one from the
// store's sequence (/brokers/seqid's version above reserved.broker.max.id).
func (b *Broker) resolveBrokerID(ctx context.Context) error {
	if b.cfg.BrokerID >= 0 {
		return nil
	}
	id, found, err := log.StoredBrokerID(nil, b.cfg.LogDirs)
	if err != nil {
		return fmt.Errorf("broker.id: %w", err)
	}
	if !found {
		if err := controller.EnsureTopLevelPaths(ctx, b.store); err != nil {
			return err
		}
		st, err := b.store.Set(ctx, controller.BrokerSeqIDPath, nil, -1)
		if err != nil {
			return fmt.Errorf("generate broker.id: %w", err)
		}
		id = st.Version + b.cfg.ReservedBrokerMaxID
	}
	c := *b.cfg
	c.BrokerID = id
	b.cfg = &c
	b.logger.Info("broker id", "broker.id", id, "generated", !found)
	return nil
}

// Addrs returns the bound address of each listener, in config order.
func (b *Broker) Addrs() []net.Addr {
	out := make([]net.Addr, len(b.listeners))
	for i, l := range b.listeners {
		out[i] = l.ln.Addr()
	}
	return out
}

// advertised returns this broker's endpoints as clients should reach them:
// advertised.listeners, with port 0 replaced by the bound port.
func (b *Broker) advertised() []controller.Endpoint {
	var eps []controller.Endpoint
	for _, l := range b.cfg.AdvertisedListeners {
		port := l.Port
		for _, bl := range b.listeners {
			if bl.name == l.Name && port == 0 {
				port = bl.ln.Addr().(*net.TCPAddr).Port
			}
		}
		eps = append(eps, controller.Endpoint{Name: l.Name, Host: l.Host, Port: int32(port), SecurityProtocol: b.cfg.ListenerSecurityProtocolMap[l.Name]})
	}
	return eps
}

// Run serves until ctx ends, then shuts down cleanly: stops accepting,
// finishes in-flight requests, closes the logs (writing the clean-shutdown
// marker) and the metadata store.
func (b *Broker) Run(ctx context.Context) error {
	defer b.closeStorage()
	// serving outlives ctx by the controlled shutdown: clients keep being
	// answered (and learn the new leaders) while leadership moves away.
	serving, stopServing := context.WithCancel(context.Background())
	defer stopServing()

	// Registration may wait for a previous run's session to expire; a
	// shutdown signal ends that wait.
	regCtx, cancelReg := context.WithCancel(serving)
	stopReg := context.AfterFunc(ctx, cancelReg)
	err := b.register(regCtx, b.store)
	stopReg()
	cancelReg()
	if err != nil {
		b.closeListeners()
		if ctx.Err() != nil {
			return nil // asked to stop before start-up finished: a clean stop
		}
		return err
	}
	if b.zk != nil {
		b.zk.renewed = b.register
	}
	var wg sync.WaitGroup
	wg.Go(func() { b.logs.Run(serving) })
	wg.Go(func() { b.keepRunning(serving, "topic config watcher", b.watchTopicConfigs) })
	wg.Go(func() { b.groups.Run(serving) })
	if b.aclSync != nil {
		wg.Go(func() { b.aclSync.Watch(serving) })
	}
	wg.Go(func() { b.txns.Run(serving) })
	if b.cfg.ZookeeperConnect != "" {
		wg.Go(func() { b.watchClusterFeatures(serving) })
	}
	b.ctrl = controller.New(controller.Config{
		BrokerID:                           b.cfg.BrokerID,
		DefaultReplicationFactor:           b.cfg.DefaultReplicationFactor,
		NumPartitions:                      b.cfg.NumPartitions,
		DeleteTopicEnable:                  b.cfg.DeleteTopicEnable,
		UncleanLeaderElection:              b.cfg.UncleanLeaderElectionEnable,
		AutoLeaderRebalanceEnable:          b.cfg.AutoLeaderRebalanceEnable,
		LeaderImbalanceCheckInterval:       b.cfg.LeaderImbalanceCheckInterval,
		LeaderImbalancePerBrokerPercentage: int(b.cfg.LeaderImbalancePerBrokerPercentage),
		InterBrokerListener:                b.cfg.InterBrokerListenerName,
		Logger:                             b.loggers.Logger("kafka.controller"),
		Now:                                time.Now,
		CachedStates:                       b.meta.controllerStates,
	}, b.store, b)
	wg.Go(func() { b.keepRunning(serving, "controller", b.ctrl.Run) })
	wg.Go(func() { b.replicas.Run(serving) })
	if b.metricsServer != nil {
		// Started once b.ctrl is set, which scrapes read; stopped with the
		// other background work, before the logs close.
		wg.Go(func() { b.serveMetrics(serving.Done()) })
	}

	// A single node's own controller answers in-process, so it can wait for
	// its first metadata before serving; in a cluster the metadata arrives
	// over the listeners, which must accept first.
	if b.cfg.ZookeeperConnect == "" {
		b.awaitMetadata(ctx)
	}
	// The accept loops add to conns; they must have ended before
	// conns.Wait, or a connection accepted just before the listeners
	// closed could be added while Wait runs (a WaitGroup misuse the race
	// detector reports) and served after it returned.
	var accepting, conns sync.WaitGroup
	for _, l := range b.listeners {
		b.logger.Info("listening", "listener", l.name, "addr", l.ln.Addr().String())
		accepting.Go(func() { b.acceptLoop(serving, l, &conns) })
	}
	<-ctx.Done()
	b.logger.Info("shutting down")
	b.controlledShutdown()
	stopServing()
	b.closeListeners()
	accepting.Wait()
	conns.Wait()
	b.workers.close() // no connection is left to start a job
	wg.Wait()
	b.groups.Close()
	b.txns.Close()
	// A scrape's ListOffsets to a leader may still be in flight; it
	// must not dial again once the peer connections closed.
	b.metricsState.remote.wait()
	b.peers.close()
	return nil
}

// restartBackoff is the pause before a background loop that stopped with an
// error (a ZooKeeper session that expired, most often) starts again.
const restartBackoff = time.Second

// keepRunning runs loop until ctx ends, starting it again after it fails:
// the controller and the config watcher end with their ZooKeeper session,
// and carry on over the next one.
func (b *Broker) keepRunning(ctx context.Context, name string, loop func(context.Context) error) {
	for {
		err := loop(ctx)
		if ctx.Err() != nil {
			return
		}
		b.logger.Warn("restarting "+name, "err", err)
		select {
		case <-time.After(restartBackoff):
		case <-ctx.Done():
			return
		}
	}
}

// registrationWait is how long a starting broker waits for a registration
// of its id left by a previous run (killed before ZooKeeper expired its
// session) to go: the session timeout, plus half of it and a second
// because ZooKeeper expires sessions at tick boundaries, at most a tick
// late, and a tick is at most half the timeout (the least it grants is
// two ticks). Kafka does not wait at all; its broker exits.
func registrationWait(sessionTimeout time.Duration) time.Duration {
	return sessionTimeout + sessionTimeout/2 + time.Second
}

// register writes this broker's ephemeral registration, at start-up and
// again after a new ZooKeeper session replaced an expired one.
func (b *Broker) register(ctx context.Context, st store.Store) error {
	var opts []controller.Option
	if b.zk != nil {
		opts = append(opts, controller.WithRegistrationWait(registrationWait(b.cfg.ZookeeperSessionTimeout), b.logger))
	}
	epoch, err := controller.RegisterBroker(ctx, st, controller.BrokerInfo{ID: b.cfg.BrokerID, Endpoints: b.advertised(), Rack: b.cfg.BrokerRack}, opts...)
	if err != nil {
		return fmt.Errorf("register broker %d: %w", b.cfg.BrokerID, err)
	}
	b.brokerEpoch.Store(epoch)
	b.logger.Info("registered", "broker_epoch", epoch)
	return nil
}

// controlledShutdown asks the controller to move this broker's leaderships
// away before it stops, as Kafka does with controlled.shutdown.enable, so
// that producers and consumers switch leaders without waiting for the
// ZooKeeper session to expire. It gives up after
// controlled.shutdown.max.retries attempts.
func (b *Broker) controlledShutdown() {
	if b.cfg.ZookeeperConnect == "" || !b.cfg.ControlledShutdownEnable {
		return
	}
	for attempt := range b.cfg.ControlledShutdownMaxRetries {
		if attempt > 0 {
			time.Sleep(b.cfg.ControlledShutdownRetryBackoff)
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.cfg.ControllerSocketTimeout)
		req := kmsg.NewPtrControlledShutdownRequest()
		req.BrokerID, req.BrokerEpoch = b.cfg.BrokerID, b.brokerEpoch.Load()
		var resp *kmsg.ControlledShutdownResponse
		var err error
		if id := b.ctrl.ActiveID(); id == b.cfg.BrokerID {
			resp, err = b.ctrl.ControlledShutdown(ctx, req)
		} else if id >= 0 {
			var r kmsg.Response
			if r, err = b.peers.Request(ctx, id, "controller", req); err == nil {
				resp = r.(*kmsg.ControlledShutdownResponse)
			}
		} else {
			err = errors.New("no active controller")
		}
		cancel()
		switch {
		case err != nil:
			b.logger.Warn("controlled shutdown", "attempt", attempt+1, "err", err)
		case resp.ErrorCode != 0:
			b.logger.Warn("controlled shutdown", "attempt", attempt+1, "err", kerr.ErrorForCode(resp.ErrorCode))
		case len(resp.PartitionsRemaining) > 0:
			b.logger.Info("controlled shutdown: leaderships remain", "attempt", attempt+1, "partitions", len(resp.PartitionsRemaining))
		default:
			b.logger.Info("controlled shutdown complete")
			return
		}
	}
	b.logger.Warn("controlled shutdown did not complete; stopping anyway")
}

// metadataWait bounds how long a starting broker waits for the controller's
// first UpdateMetadata before it serves clients anyway.
const metadataWait = 30 * time.Second

// awaitMetadata waits for the controller's first UpdateMetadata, so that
// clients connecting right after start-up find the topics that exist
// instead of UNKNOWN_TOPIC_OR_PARTITION, and this broker's partitions led.
func (b *Broker) awaitMetadata(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, metadataWait)
	defer cancel()
	changed := b.meta.changes()
	if b.meta.controller() >= 0 {
		return
	}
	select {
	case <-changed:
	case <-ctx.Done():
		if ctx.Err() == context.DeadlineExceeded {
			b.logger.Warn("no metadata from the controller yet; serving anyway", "waited", metadataWait)
		}
	}
}

func (b *Broker) closeListeners() {
	for _, l := range b.listeners {
		l.ln.Close()
	}
	if b.metricsServer != nil {
		b.metricsServer.Close()
	}
}

// closeStorage closes what New opened, in reverse order.
func (b *Broker) closeStorage() {
	if b.logs != nil {
		if err := b.logs.Close(); err != nil {
			b.logger.Error("close logs", "err", err)
		}
		b.logs = nil
	}
	if b.store != nil {
		b.store.Close()
		b.store = nil
	}
	if b.db != nil {
		b.db.Close()
		b.db = nil
	}
}

// cleanerConfig is the log cleaner's part of the broker configuration.
func cleanerConfig(cfg *config.Broker) log.CleanerConfig {
	return log.CleanerConfig{
		Enable: cfg.LogCleanerEnable, Threads: int(cfg.LogCleanerThreads), DedupeBufferSize: cfg.LogCleanerDedupeBufferSize,
		IOBufferLoadFactor: cfg.LogCleanerIOBufferLoadFactor, IOMaxBytesPerSecond: cfg.LogCleanerIOMaxBytesPerSecond,
		Backoff: cfg.LogCleanerBackoff,
	}
}
