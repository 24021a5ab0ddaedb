package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Broker is the typed view of a broker's static configuration
// (server.properties plus --override), with the validated raw values kept
// for DescribeConfigs. Durations that Kafka keeps in milliseconds are
// time.Duration here, except where the value may be Long.MAX (those keep
// Kafka's name and unit). Topic-level defaults are read through Topic.
type Broker struct {
	BrokerID                 int32 // -1: generate (see broker.id)
	BrokerIDGenerationEnable bool
	ReservedBrokerMaxID      int32
	BrokerRack               string // "" when unset
	// ReplicaSelectorClass is replica.selector.class: "" (consumers fetch
	// from the leader) or RackAwareReplicaSelector.
	ReplicaSelectorClass string

	// AuthorizerClassName is "" (no authorization) or one of Kafka's
	// ZooKeeper-mode ACL authorizer class names.
	AuthorizerClassName       string
	SuperUsers                string // raw super.users, principals separated by ';'
	AllowEveryoneIfNoACLFound bool

	ZookeeperConnect             string // "": single-node mode with the embedded store
	ZookeeperSessionTimeout      time.Duration
	ZookeeperConnectionTimeout   time.Duration // defaults to the session timeout
	ZookeeperMaxInFlightRequests int32

	Listeners                   []Listener
	AdvertisedListeners         []Listener // hosts filled in; never empty hosts
	ListenerSecurityProtocolMap map[string]string
	InterBrokerListenerName     string // effective, always one of AdvertisedListeners
	// ListenerTLS holds the TLS settings of each listener whose protocol
	// runs over TLS (SSL, SASL_SSL), by listener name.
	ListenerTLS              map[string]TLS
	SocketSendBufferBytes    int32
	SocketReceiveBufferBytes int32
	SocketRequestMaxBytes    int32
	MaxConnections           int32
	MaxConnectionsPerIP      int32
	// MaxConnectionsPerIPOverrides maps a host (an IP address as text) to
	// its own max.connections.per.ip.
	MaxConnectionsPerIPOverrides map[string]int32
	// MaxConnectionCreationRate is max.connection.creation.rate over all
	// listeners but the protected one; ListenerConnectionCreationRate
	// gives each listener's.
	MaxConnectionCreationRate int32
	ConnectionsMaxIdle        time.Duration
	// SASLMechanismInterBrokerProtocol is the mechanism brokers
	// authenticate to each other with on a SASL inter-broker listener.
	SASLMechanismInterBrokerProtocol string
	QueuedMaxRequests                int32
	QueuedMaxRequestBytes            int64 // -1: no limit
	FetchMaxBytes                    int32
	// MaxIncrementalFetchSessionCacheSlots bounds the fetch sessions
	// (KIP-227) the broker keeps; 0 keeps none.
	MaxIncrementalFetchSessionCacheSlots int

	NumPartitions            int32
	DefaultReplicationFactor int16
	AutoCreateTopicsEnable   bool
	DeleteTopicEnable        bool
	MessageMaxBytes          int32

	LogDirs                               []string
	NumRecoveryThreadsPerDataDir          int32
	LogRetentionCheckInterval             time.Duration
	LogFlushSchedulerIntervalMs           int64
	LogFlushOffsetCheckpointInterval      time.Duration
	LogFlushStartOffsetCheckpointInterval time.Duration
	LogCleanerEnable                      bool
	LogCleanerThreads                     int32
	LogCleanerDedupeBufferSize            int64
	LogCleanerIOBufferSize                int32
	LogCleanerBackoff                     time.Duration
	LogCleanerIOMaxBytesPerSecond         float64
	LogCleanerIOBufferLoadFactor          float64

	MinInSyncReplicas                      int32
	UncleanLeaderElectionEnable            bool
	ReplicaLagTimeMax                      time.Duration
	ReplicaSocketTimeout                   time.Duration
	ReplicaSocketReceiveBufferBytes        int32
	ReplicaFetchMaxBytes                   int32
	ReplicaFetchMinBytes                   int32
	ReplicaFetchResponseMaxBytes           int32
	ReplicaFetchWaitMax                    time.Duration
	ReplicaFetchBackoff                    time.Duration
	ReplicaHighWatermarkCheckpointInterval time.Duration
	NumReplicaFetchers                     int32
	// Replication throttles (KIP-73): rates in bytes per second, measured
	// over ReplicationQuotaWindowNum samples of ReplicationQuotaWindowSize.
	LeaderReplicationThrottledRate   int64
	FollowerReplicationThrottledRate int64
	ReplicationQuotaWindowNum        int32
	ReplicationQuotaWindowSize       time.Duration
	// Client quotas: rates measured over QuotaWindowNum samples of
	// QuotaWindowSize.
	QuotaWindowNum  int32
	QuotaWindowSize time.Duration
	// controller_mutation_rate's burst: ControllerQuotaWindowNum windows
	// of ControllerQuotaWindowSize.
	ControllerQuotaWindowNum           int32
	ControllerQuotaWindowSize          time.Duration
	ControllerSocketTimeout            time.Duration
	ControlledShutdownEnable           bool
	ControlledShutdownMaxRetries       int32
	ControlledShutdownRetryBackoff     time.Duration
	AutoLeaderRebalanceEnable          bool
	LeaderImbalancePerBrokerPercentage int32
	LeaderImbalanceCheckInterval       time.Duration

	GroupInitialRebalanceDelay    time.Duration
	GroupMinSessionTimeout        time.Duration
	GroupMaxSessionTimeout        time.Duration
	GroupMaxSize                  int32
	OffsetsTopicNumPartitions     int32
	OffsetsTopicReplicationFactor int16
	OffsetsTopicSegmentBytes      int32
	OffsetsTopicCompressionCodec  int8 // 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	OffsetsLoadBufferSize         int32
	OffsetsRetention              time.Duration
	OffsetsRetentionCheckInterval time.Duration
	OffsetsCommitTimeout          time.Duration
	OffsetsCommitRequiredAcks     int16
	OffsetMetadataMaxBytes        int32

	TransactionMaxTimeout                   time.Duration
	TransactionalIDExpiration               time.Duration
	TransactionStateLogNumPartitions        int32
	TransactionStateLogReplicationFactor    int16
	TransactionStateLogMinISR               int32
	TransactionStateLogSegmentBytes         int32
	TransactionStateLogLoadBufferSize       int32
	TransactionAbortTimedOutCleanupInterval time.Duration
	TransactionRemoveExpiredCleanupInterval time.Duration
	ProducerIDExpiration                    time.Duration

	MetricsListener    string // "": no metrics listener
	MetricsPprofEnable bool
	LogFormat          string // "text" or "json"
	// LogOpenFilesMax is brook.log.open.files.max (0: a quarter of
	// RLIMIT_NOFILE).
	LogOpenFilesMax int32

	tab    *table
	static map[string]string // canonical values set in the file or by override
	// Dynamic layers (/config/brokers/<id> and /config/brokers/<default>),
	// both above static; see WithDynamic.
	dynamicBroker  map[string]string
	dynamicDefault map[string]string
	hostname       func() (string, error)
}

// Load reads a server.properties file (path "" for none), applies
// overrides of the form key=value on top of it, and builds the Broker.
// Warnings (unknown keys, keys Brook ignores) are for the caller to log;
// an error names the offending key and value.
func Load(path string, overrides []string) (*Broker, []string, error) {
	m := map[string]string{}
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, fmt.Errorf("load config: %w", err)
		}
		m, err = ParseProperties(f)
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("load config %s: %w", path, err)
		}
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, nil, fmt.Errorf("%w: override %q is not key=value", ErrSyntax, o)
		}
		m[k] = v
	}
	return FromMap(m)
}

// FromMap builds a Broker from raw server.properties values.
func FromMap(m map[string]string) (*Broker, []string, error) {
	return fromMap(m, canonicalHostname)
}

func fromMap(m map[string]string, hostname func() (string, error)) (*Broker, []string, error) {
	b := &Broker{tab: newTable(), static: map[string]string{}, hostname: hostname}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var warnings []string
	var errs []error
	for _, k := range keys {
		d, ok := b.tab.broker[k]
		if base, prefixed := b.tab.listenerOverride(k); !ok && prefixed {
			v, err := base.parseFor(k, m[k])
			if err != nil {
				errs = append(errs, err)
				continue
			}
			b.static[k] = v
			if note := listenerOverrideNote(base); note != "" {
				warnings = append(warnings, fmt.Sprintf("configuration %s: %s", k, note))
			}
			continue
		}
		if !ok {
			if kraftOnly(k) {
				warnings = append(warnings, fmt.Sprintf("configuration %q belongs to KRaft mode, which Brook does not implement; ignored", k))
			} else {
				warnings = append(warnings, fmt.Sprintf("unknown configuration %q ignored", k))
			}
			continue
		}
		v, err := d.parse(m[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		b.static[k] = v
		if d.Ignored {
			warnings = append(warnings, fmt.Sprintf("configuration %s: %s", k, d.Brook))
		}
	}
	if len(errs) > 0 {
		return nil, warnings, errors.Join(errs...)
	}
	if err := b.build(); err != nil {
		return nil, warnings, err
	}
	return b, warnings, nil
}

// build fills the typed fields and checks the combination of values.
func (b *Broker) build() error {
	b.fill()
	if err := b.checkNetwork(b.hostname); err != nil {
		return err
	}
	if err := b.checkSASL(); err != nil {
		return err
	}
	return b.check()
}

// kraftOnly reports keys of Kafka's KRaft mode, common in Kafka 3.3+
// sample files; Brook implements ZooKeeper mode and the embedded store.
func kraftOnly(k string) bool {
	switch k {
	case "process.roles", "node.id", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
		"controller.listener.names", "metadata.log.dir":
		return true
	}
	return false
}

// Value returns the effective value of a broker config: the first set of
// dynamic per-broker, dynamic cluster default and static values, else the
// default. ok is false for unknown names and for null.
func (b *Broker) Value(name string) (string, bool) {
	for _, layer := range []map[string]string{b.dynamicBroker, b.dynamicDefault, b.static} {
		if v, ok := layer[name]; ok {
			return v, true
		}
	}
	if d, ok := b.tab.broker[name]; ok && d.HasDefault {
		return d.Default, true
	}
	return "", false
}

// IsSet reports whether name was given in the file, an override or a
// dynamic config.
func (b *Broker) IsSet(name string) bool {
	_, s := b.static[name]
	_, d := b.dynamicDefault[name]
	_, p := b.dynamicBroker[name]
	return s || d || p
}

// Static returns a copy of the validated values set in the file and
// overrides, in canonical form.
func (b *Broker) Static() map[string]string {
	out := make(map[string]string, len(b.static))
	for k, v := range b.static {
		out[k] = v
	}
	return out
}

func (b *Broker) str(name string) string {
	v, _ := b.Value(name)
	return v
}

// num reads a validated integer config; null reads as 0.
func (b *Broker) num(name string) int64 {
	n, _ := strconv.ParseInt(b.str(name), 10, 64)
	return n
}

func (b *Broker) flag(name string) bool { return b.str(name) == "true" }

// real reads a validated double config; null reads as 0.
func (b *Broker) real(name string) float64 {
	f, _ := strconv.ParseFloat(b.str(name), 64)
	return f
}

// dur converts n units to a Duration, saturating instead of overflowing.
func dur(n int64, unit time.Duration) time.Duration {
	if n > 0 && n > int64(math.MaxInt64/unit) {
		return time.Duration(math.MaxInt64)
	}
	if n < 0 && n < int64(math.MinInt64/unit) {
		return time.Duration(math.MinInt64)
	}
	return time.Duration(n) * unit
}

func (b *Broker) ms(name string) time.Duration { return dur(b.num(name), time.Millisecond) }

// RackAwareReplicaSelector is Kafka's selector of a same-rack replica for
// consumers with client.rack, the one replica.selector.class Brook knows.
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// fill sets the typed fields from the validated values.
func (b *Broker) fill() {
	b.BrokerID = int32(b.num("broker.id"))
	b.BrokerIDGenerationEnable = b.flag("broker.id.generation.enable")
	b.ReservedBrokerMaxID = int32(b.num("reserved.broker.max.id"))
	b.BrokerRack = b.str("broker.rack")
	b.ReplicaSelectorClass = b.str("replica.selector.class")
	b.MetricsListener = b.str("brook.metrics.listener")
	b.MetricsPprofEnable = b.flag("brook.metrics.pprof.enable")
	b.LogFormat = b.str("brook.log.format")
	b.LogOpenFilesMax = int32(b.num("brook.log.open.files.max"))
	b.AuthorizerClassName = b.str("authorizer.class.name")
	b.SuperUsers = b.str("super.users")
	b.AllowEveryoneIfNoACLFound = b.flag("allow.everyone.if.no.acl.found")

	b.ZookeeperConnect = b.str("zookeeper.connect")
	b.ZookeeperSessionTimeout = b.ms("zookeeper.session.timeout.ms")
	b.ZookeeperConnectionTimeout = b.ZookeeperSessionTimeout
	if b.IsSet("zookeeper.connection.timeout.ms") {
		b.ZookeeperConnectionTimeout = b.ms("zookeeper.connection.timeout.ms")
	}
	b.ZookeeperMaxInFlightRequests = int32(b.num("zookeeper.max.in.flight.requests"))

	b.SocketSendBufferBytes = int32(b.num("socket.send.buffer.bytes"))
	b.SocketReceiveBufferBytes = int32(b.num("socket.receive.buffer.bytes"))
	b.SocketRequestMaxBytes = int32(b.num("socket.request.max.bytes"))
	b.MaxConnections = int32(b.num("max.connections"))
	b.MaxConnectionsPerIP = int32(b.num("max.connections.per.ip"))
	// The table's validator has accepted the value already.
	b.MaxConnectionsPerIPOverrides, _ = ParseConnectionOverrides(b.str("max.connections.per.ip.overrides"))
	b.MaxConnectionCreationRate = int32(b.num("max.connection.creation.rate"))
	b.ConnectionsMaxIdle = b.ms("connections.max.idle.ms")
	b.SASLMechanismInterBrokerProtocol = b.str("sasl.mechanism.inter.broker.protocol")
	b.QueuedMaxRequests = int32(b.num("queued.max.requests"))
	b.QueuedMaxRequestBytes = b.num("queued.max.request.bytes")
	b.FetchMaxBytes = int32(b.num("fetch.max.bytes"))
	b.MaxIncrementalFetchSessionCacheSlots = int(b.num("max.incremental.fetch.session.cache.slots"))

	b.NumPartitions = int32(b.num("num.partitions"))
	b.DefaultReplicationFactor = int16(b.num("default.replication.factor"))
	b.AutoCreateTopicsEnable = b.flag("auto.create.topics.enable")
	b.DeleteTopicEnable = b.flag("delete.topic.enable")
	b.MessageMaxBytes = int32(b.num("message.max.bytes"))

	dirs := b.str("log.dir")
	if b.IsSet("log.dirs") {
		dirs = b.str("log.dirs")
	}
	b.LogDirs = nil
	for _, d := range strings.Split(dirs, ",") {
		if d = strings.TrimSpace(d); d != "" {
			b.LogDirs = append(b.LogDirs, d)
		}
	}
	b.NumRecoveryThreadsPerDataDir = int32(b.num("num.recovery.threads.per.data.dir"))
	b.LogRetentionCheckInterval = b.ms("log.retention.check.interval.ms")
	b.LogFlushSchedulerIntervalMs = b.num("log.flush.scheduler.interval.ms")
	b.LogFlushOffsetCheckpointInterval = b.ms("log.flush.offset.checkpoint.interval.ms")
	b.LogFlushStartOffsetCheckpointInterval = b.ms("log.flush.start.offset.checkpoint.interval.ms")
	b.LogCleanerEnable = b.flag("log.cleaner.enable")
	b.LogCleanerThreads = int32(b.num("log.cleaner.threads"))
	b.LogCleanerDedupeBufferSize = b.num("log.cleaner.dedupe.buffer.size")
	b.LogCleanerIOBufferSize = int32(b.num("log.cleaner.io.buffer.size"))
	b.LogCleanerBackoff = b.ms("log.cleaner.backoff.ms")
	b.LogCleanerIOMaxBytesPerSecond = b.real("log.cleaner.io.max.bytes.per.second")
	b.LogCleanerIOBufferLoadFactor = b.real("log.cleaner.io.buffer.load.factor")

	b.MinInSyncReplicas = int32(b.num("min.insync.replicas"))
	b.UncleanLeaderElectionEnable = b.flag("unclean.leader.election.enable")
	b.ReplicaLagTimeMax = b.ms("replica.lag.time.max.ms")
	b.ReplicaSocketTimeout = b.ms("replica.socket.timeout.ms")
	b.ReplicaSocketReceiveBufferBytes = int32(b.num("replica.socket.receive.buffer.bytes"))
	b.ReplicaFetchMaxBytes = int32(b.num("replica.fetch.max.bytes"))
	b.ReplicaFetchMinBytes = int32(b.num("replica.fetch.min.bytes"))
	b.ReplicaFetchResponseMaxBytes = int32(b.num("replica.fetch.response.max.bytes"))
	b.ReplicaFetchWaitMax = b.ms("replica.fetch.wait.max.ms")
	b.ReplicaFetchBackoff = b.ms("replica.fetch.backoff.ms")
	b.ReplicaHighWatermarkCheckpointInterval = b.ms("replica.high.watermark.checkpoint.interval.ms")
	b.NumReplicaFetchers = int32(b.num("num.replica.fetchers"))
	b.LeaderReplicationThrottledRate = b.num("leader.replication.throttled.rate")
	b.FollowerReplicationThrottledRate = b.num("follower.replication.throttled.rate")
	b.ReplicationQuotaWindowNum = int32(b.num("replication.quota.window.num"))
	b.ReplicationQuotaWindowSize = dur(b.num("replication.quota.window.size.seconds"), time.Second)
	b.QuotaWindowNum = int32(b.num("quota.window.num"))
	b.QuotaWindowSize = dur(b.num("quota.window.size.seconds"), time.Second)
	b.ControllerQuotaWindowNum = int32(b.num("controller.quota.window.num"))
	b.ControllerQuotaWindowSize = dur(b.num("controller.quota.window.size.seconds"), time.Second)
	b.ControllerSocketTimeout = b.ms("controller.socket.timeout.ms")
	b.ControlledShutdownEnable = b.flag("controlled.shutdown.enable")
	b.ControlledShutdownMaxRetries = int32(b.num("controlled.shutdown.max.retries"))
	b.ControlledShutdownRetryBackoff = b.ms("controlled.shutdown.retry.backoff.ms")
	b.AutoLeaderRebalanceEnable = b.flag("auto.leader.rebalance.enable")
	b.LeaderImbalancePerBrokerPercentage = int32(b.num("leader.imbalance.per.broker.percentage"))
	b.LeaderImbalanceCheckInterval = dur(b.num("leader.imbalance.check.interval.seconds"), time.Second)

	b.GroupInitialRebalanceDelay = b.ms("group.initial.rebalance.delay.ms")
	b.GroupMinSessionTimeout = b.ms("group.min.session.timeout.ms")
	b.GroupMaxSessionTimeout = b.ms("group.max.session.timeout.ms")
	b.GroupMaxSize = int32(b.num("group.max.size"))
	b.OffsetsTopicNumPartitions = int32(b.num("offsets.topic.num.partitions"))
	b.OffsetsTopicReplicationFactor = int16(b.num("offsets.topic.replication.factor"))
	b.OffsetsTopicSegmentBytes = int32(b.num("offsets.topic.segment.bytes"))
	b.OffsetsTopicCompressionCodec = int8(b.num("offsets.topic.compression.codec"))
	b.OffsetsLoadBufferSize = int32(b.num("offsets.load.buffer.size"))
	b.OffsetsRetention = dur(b.num("offsets.retention.minutes"), time.Minute)
	b.OffsetsRetentionCheckInterval = b.ms("offsets.retention.check.interval.ms")
	b.OffsetsCommitTimeout = b.ms("offsets.commit.timeout.ms")
	b.OffsetsCommitRequiredAcks = int16(b.num("offsets.commit.required.acks"))
	b.OffsetMetadataMaxBytes = int32(b.num("offset.metadata.max.bytes"))

	b.TransactionMaxTimeout = b.ms("transaction.max.timeout.ms")
	b.TransactionalIDExpiration = b.ms("transactional.id.expiration.ms")
	b.TransactionStateLogNumPartitions = int32(b.num("transaction.state.log.num.partitions"))
	b.TransactionStateLogReplicationFactor = int16(b.num("transaction.state.log.replication.factor"))
	b.TransactionStateLogMinISR = int32(b.num("transaction.state.log.min.isr"))
	b.TransactionStateLogSegmentBytes = int32(b.num("transaction.state.log.segment.bytes"))
	b.TransactionStateLogLoadBufferSize = int32(b.num("transaction.state.log.load.buffer.size"))
	b.TransactionAbortTimedOutCleanupInterval = b.ms("transaction.abort.timed.out.transaction.cleanup.interval.ms")
	b.TransactionRemoveExpiredCleanupInterval = b.ms("transaction.remove.expired.transaction.cleanup.interval.ms")
	b.ProducerIDExpiration = b.ms("producer.id.expiration.ms")
}

// check applies Kafka's cross-config requirements (KafkaConfig
// validateValues) that concern Brook.
func (b *Broker) check() error {
	bad := func(name, reason string) error {
		return &ValueError{Name: name, Value: b.str(name), Reason: reason}
	}
	if b.BrokerIDGenerationEnable {
		if b.BrokerID < -1 || b.BrokerID > b.ReservedBrokerMaxID {
			return bad("broker.id", "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id")
		}
	} else if b.BrokerID < 0 {
		return bad("broker.id", "broker.id must be greater than or equal to 0 when broker.id.generation.enable is false")
	}
	if len(b.LogDirs) == 0 {
		name := "log.dir"
		if b.IsSet("log.dirs") {
			name = "log.dirs"
		}
		return bad(name, "at least one log directory must be defined via log.dirs or log.dir")
	}
	if b.QueuedMaxRequestBytes > 0 && b.QueuedMaxRequestBytes < int64(b.SocketRequestMaxBytes) {
		return bad("queued.max.request.bytes", "queued.max.request.bytes must be larger or equal to socket.request.max.bytes")
	}
	if b.MaxConnectionsPerIP == 0 && len(b.MaxConnectionsPerIPOverrides) == 0 {
		return bad("max.connections.per.ip", "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.")
	}
	if b.OffsetsTopicCompressionCodec < 0 || b.OffsetsTopicCompressionCodec > 4 {
		return bad("offsets.topic.compression.codec", "unknown compression codec id; valid ids are 0 to 4")
	}
	if b.LogCleanerThreads > 0 && b.LogCleanerDedupeBufferSize/int64(b.LogCleanerThreads) <= 1024*1024 {
		return bad("log.cleaner.dedupe.buffer.size", "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread")
	}
	if b.ReplicaFetchWaitMax > b.ReplicaSocketTimeout {
		return bad("replica.fetch.wait.max.ms", "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent unnecessary socket timeouts")
	}
	if b.MetricsListener != "" {
		if _, port, err := net.SplitHostPort(b.MetricsListener); err != nil || port == "" {
			return bad("brook.metrics.listener", "must be HOST:PORT (an empty host listens on every address)")
		}
	}
	if b.ReplicaFetchWaitMax > b.ReplicaLagTimeMax {
		return bad("replica.fetch.wait.max.ms", "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR")
	}
	// The broker-level defaults must make valid topic configs, as Kafka
	// builds a LogConfig from them at startup.
	if _, err := b.Topic(nil); err != nil {
		return fmt.Errorf("topic defaults from broker configs: %w", err)
	}
	return nil
}
