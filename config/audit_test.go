package config

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readBy says, for every config the table does not mark unused, how Brook's
// code reads it (topic configs keyed "topic:<name>"):
//
//   - "Broker.F" or "Topic.F": through that typed field, which code outside
//     package config must read;
//   - "via topic:<t>": a broker config that only supplies the default of
//     topic config t (its synonym chain);
//   - "config: ...": package config itself acts on it (validation);
//   - "raw: <file>": that file, outside package config, reads the config by
//     its quoted name from a raw config map (the controller, which reads
//     topic overrides from the metadata store);
//
// TestEveryConfigReadOrUnused checks it against the table and the code, so
// that a config added to the table without code reading it fails.
var readBy = map[string]string{
	"ssl.cipher.suites":                                           "Broker.ListenerTLS",
	"ssl.enabled.protocols":                                       "Broker.ListenerTLS",
	"ssl.keystore.type":                                           "Broker.ListenerTLS",
	"ssl.keystore.location":                                       "Broker.ListenerTLS",
	"ssl.keystore.password":                                       "Broker.ListenerTLS",
	"ssl.key.password":                                            "Broker.ListenerTLS",
	"ssl.keystore.key":                                            "Broker.ListenerTLS",
	"ssl.keystore.certificate.chain":                              "Broker.ListenerTLS",
	"ssl.truststore.type":                                         "Broker.ListenerTLS",
	"ssl.truststore.location":                                     "Broker.ListenerTLS",
	"ssl.truststore.password":                                     "Broker.ListenerTLS",
	"ssl.truststore.certificates":                                 "Broker.ListenerTLS",
	"ssl.endpoint.identification.algorithm":                       "Broker.ListenerTLS",
	"ssl.client.auth":                                             "Broker.ListenerTLS",
	"ssl.principal.mapping.rules":                                 "Broker.ListenerTLS",
	"allow.everyone.if.no.acl.found":                              "Broker.AllowEveryoneIfNoACLFound",
	"authorizer.class.name":                                       "Broker.AuthorizerClassName",
	"super.users":                                                 "Broker.SuperUsers",
	"advertised.listeners":                                        "Broker.AdvertisedListeners",
	"auto.create.topics.enable":                                   "Broker.AutoCreateTopicsEnable",
	"auto.leader.rebalance.enable":                                "Broker.AutoLeaderRebalanceEnable",
	"broker.id":                                                   "Broker.BrokerID",
	"broker.id.generation.enable":                                 "config: check refuses broker.id -1 without it",
	"broker.rack":                                                 "Broker.BrokerRack",
	"replica.selector.class":                                      "Broker.ReplicaSelectorClass",
	"brook.log.format":                                            "Broker.LogFormat",
	"brook.log.open.files.max":                                    "Broker.LogOpenFilesMax",
	"brook.metrics.listener":                                      "Broker.MetricsListener",
	"brook.metrics.pprof.enable":                                  "Broker.MetricsPprofEnable",
	"compression.type":                                            "via topic:compression.type",
	"connections.max.idle.ms":                                     "Broker.ConnectionsMaxIdle",
	"connections.max.reauth.ms":                                   "config: SASLFor reads it per listener and mechanism",
	"sasl.enabled.mechanisms":                                     "config: SASLFor reads it per listener",
	"sasl.jaas.config":                                            "config: SASLFor reads it per listener and mechanism",
	"sasl.mechanism.inter.broker.protocol":                        "Broker.SASLMechanismInterBrokerProtocol",
	"controlled.shutdown.enable":                                  "Broker.ControlledShutdownEnable",
	"controlled.shutdown.max.retries":                             "Broker.ControlledShutdownMaxRetries",
	"controlled.shutdown.retry.backoff.ms":                        "Broker.ControlledShutdownRetryBackoff",
	"controller.socket.timeout.ms":                                "Broker.ControllerSocketTimeout",
	"default.replication.factor":                                  "Broker.DefaultReplicationFactor",
	"delete.topic.enable":                                         "Broker.DeleteTopicEnable",
	"fetch.max.bytes":                                             "Broker.FetchMaxBytes",
	"max.incremental.fetch.session.cache.slots":                   "Broker.MaxIncrementalFetchSessionCacheSlots",
	"group.initial.rebalance.delay.ms":                            "Broker.GroupInitialRebalanceDelay",
	"group.max.session.timeout.ms":                                "Broker.GroupMaxSessionTimeout",
	"group.max.size":                                              "Broker.GroupMaxSize",
	"group.min.session.timeout.ms":                                "Broker.GroupMinSessionTimeout",
	"inter.broker.listener.name":                                  "Broker.InterBrokerListenerName",
	"leader.imbalance.check.interval.seconds":                     "Broker.LeaderImbalanceCheckInterval",
	"leader.imbalance.per.broker.percentage":                      "Broker.LeaderImbalancePerBrokerPercentage",
	"listener.security.protocol.map":                              "Broker.ListenerSecurityProtocolMap",
	"listeners":                                                   "Broker.Listeners",
	"log.cleanup.policy":                                          "via topic:cleanup.policy",
	"log.dir":                                                     "Broker.LogDirs",
	"log.dirs":                                                    "Broker.LogDirs",
	"log.flush.interval.messages":                                 "via topic:flush.messages",
	"log.flush.interval.ms":                                       "via topic:flush.ms",
	"log.flush.offset.checkpoint.interval.ms":                     "Broker.LogFlushOffsetCheckpointInterval",
	"log.flush.scheduler.interval.ms":                             "Broker.LogFlushSchedulerIntervalMs",
	"log.flush.start.offset.checkpoint.interval.ms":               "Broker.LogFlushStartOffsetCheckpointInterval",
	"log.index.interval.bytes":                                    "via topic:index.interval.bytes",
	"log.index.size.max.bytes":                                    "via topic:segment.index.bytes",
	"log.message.timestamp.after.max.ms":                          "via topic:message.timestamp.after.max.ms",
	"log.message.timestamp.before.max.ms":                         "via topic:message.timestamp.before.max.ms",
	"log.message.timestamp.difference.max.ms":                     "via topic:message.timestamp.difference.max.ms",
	"log.message.timestamp.type":                                  "via topic:message.timestamp.type",
	"log.retention.bytes":                                         "via topic:retention.bytes",
	"log.cleaner.backoff.ms":                                      "Broker.LogCleanerBackoff",
	"log.cleaner.dedupe.buffer.size":                              "Broker.LogCleanerDedupeBufferSize",
	"log.cleaner.delete.retention.ms":                             "via topic:delete.retention.ms",
	"log.cleaner.enable":                                          "Broker.LogCleanerEnable",
	"log.cleaner.io.buffer.load.factor":                           "Broker.LogCleanerIOBufferLoadFactor",
	"log.cleaner.io.max.bytes.per.second":                         "Broker.LogCleanerIOMaxBytesPerSecond",
	"log.cleaner.max.compaction.lag.ms":                           "via topic:max.compaction.lag.ms",
	"log.cleaner.min.cleanable.ratio":                             "via topic:min.cleanable.dirty.ratio",
	"log.cleaner.min.compaction.lag.ms":                           "via topic:min.compaction.lag.ms",
	"log.cleaner.threads":                                         "Broker.LogCleanerThreads",
	"num.recovery.threads.per.data.dir":                           "Broker.NumRecoveryThreadsPerDataDir",
	"log.retention.check.interval.ms":                             "Broker.LogRetentionCheckInterval",
	"log.retention.hours":                                         "via topic:retention.ms",
	"log.retention.minutes":                                       "via topic:retention.ms",
	"log.retention.ms":                                            "via topic:retention.ms",
	"log.roll.hours":                                              "via topic:segment.ms",
	"log.roll.jitter.hours":                                       "via topic:segment.jitter.ms",
	"log.roll.jitter.ms":                                          "via topic:segment.jitter.ms",
	"log.roll.ms":                                                 "via topic:segment.ms",
	"log.segment.bytes":                                           "via topic:segment.bytes",
	"log.segment.delete.delay.ms":                                 "via topic:file.delete.delay.ms",
	"max.connections":                                             "Broker.MaxConnections",
	"max.connections.per.ip":                                      "Broker.MaxConnectionsPerIP",
	"message.max.bytes":                                           "via topic:max.message.bytes",
	"min.insync.replicas":                                         "via topic:min.insync.replicas",
	"num.partitions":                                              "Broker.NumPartitions",
	"offset.metadata.max.bytes":                                   "Broker.OffsetMetadataMaxBytes",
	"offsets.commit.timeout.ms":                                   "Broker.OffsetsCommitTimeout",
	"offsets.commit.required.acks":                                "Broker.OffsetsCommitRequiredAcks",
	"offsets.load.buffer.size":                                    "Broker.OffsetsLoadBufferSize",
	"offsets.retention.check.interval.ms":                         "Broker.OffsetsRetentionCheckInterval",
	"offsets.retention.minutes":                                   "Broker.OffsetsRetention",
	"offsets.topic.num.partitions":                                "Broker.OffsetsTopicNumPartitions",
	"offsets.topic.replication.factor":                            "Broker.OffsetsTopicReplicationFactor",
	"offsets.topic.segment.bytes":                                 "Broker.OffsetsTopicSegmentBytes",
	"transaction.max.timeout.ms":                                  "Broker.TransactionMaxTimeout",
	"transactional.id.expiration.ms":                              "Broker.TransactionalIDExpiration",
	"transaction.state.log.num.partitions":                        "Broker.TransactionStateLogNumPartitions",
	"transaction.state.log.replication.factor":                    "Broker.TransactionStateLogReplicationFactor",
	"transaction.state.log.min.isr":                               "Broker.TransactionStateLogMinISR",
	"transaction.state.log.segment.bytes":                         "Broker.TransactionStateLogSegmentBytes",
	"transaction.state.log.load.buffer.size":                      "Broker.TransactionStateLogLoadBufferSize",
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": "Broker.TransactionAbortTimedOutCleanupInterval",
	"transaction.remove.expired.transaction.cleanup.interval.ms":  "Broker.TransactionRemoveExpiredCleanupInterval",
	"producer.id.expiration.ms":                                   "Broker.ProducerIDExpiration",
	"max.connections.per.ip.overrides":                            "Broker.MaxConnectionsPerIPOverrides",
	"queued.max.requests":                                         "Broker.QueuedMaxRequests",
	"queued.max.request.bytes":                                    "Broker.QueuedMaxRequestBytes",
	"replica.fetch.backoff.ms":                                    "Broker.ReplicaFetchBackoff",
	"leader.replication.throttled.rate":                           "Broker.LeaderReplicationThrottledRate",
	"follower.replication.throttled.rate":                         "Broker.FollowerReplicationThrottledRate",
	"replication.quota.window.num":                                "Broker.ReplicationQuotaWindowNum",
	"replication.quota.window.size.seconds":                       "Broker.ReplicationQuotaWindowSize",
	"quota.window.num":                                            "Broker.QuotaWindowNum",
	"quota.window.size.seconds":                                   "Broker.QuotaWindowSize",
	"replica.fetch.max.bytes":                                     "Broker.ReplicaFetchMaxBytes",
	"replica.fetch.min.bytes":                                     "Broker.ReplicaFetchMinBytes",
	"replica.fetch.response.max.bytes":                            "Broker.ReplicaFetchResponseMaxBytes",
	"replica.fetch.wait.max.ms":                                   "Broker.ReplicaFetchWaitMax",
	"replica.high.watermark.checkpoint.interval.ms":               "Broker.ReplicaHighWatermarkCheckpointInterval",
	"replica.lag.time.max.ms":                                     "Broker.ReplicaLagTimeMax",
	"replica.socket.timeout.ms":                                   "Broker.ReplicaSocketTimeout",
	"reserved.broker.max.id":                                      "Broker.ReservedBrokerMaxID",
	"security.inter.broker.protocol":                              "Broker.InterBrokerListenerName",
	"socket.receive.buffer.bytes":                                 "Broker.SocketReceiveBufferBytes",
	"socket.request.max.bytes":                                    "Broker.SocketRequestMaxBytes",
	"socket.send.buffer.bytes":                                    "Broker.SocketSendBufferBytes",
	"unclean.leader.election.enable":                              "Broker.UncleanLeaderElectionEnable",
	"zookeeper.connect":                                           "Broker.ZookeeperConnect",
	"zookeeper.connection.timeout.ms":                             "Broker.ZookeeperConnectionTimeout",
	"zookeeper.session.timeout.ms":                                "Broker.ZookeeperSessionTimeout",
	"max.connection.creation.rate":                                "Broker.MaxConnectionCreationRate",
	"controller.quota.window.num":                                 "Broker.ControllerQuotaWindowNum",
	"controller.quota.window.size.seconds":                        "Broker.ControllerQuotaWindowSize",

	"topic:cleanup.policy":                          "Topic.Delete",
	"topic:leader.replication.throttled.replicas":   "Topic.LeaderReplicationThrottledReplicas",
	"topic:follower.replication.throttled.replicas": "Topic.FollowerReplicationThrottledReplicas",
	"topic:compression.type":                        "Topic.CompressionType",
	"topic:file.delete.delay.ms":                    "Topic.FileDeleteDelayMs",
	"topic:delete.retention.ms":                     "Topic.DeleteRetentionMs",
	"topic:max.compaction.lag.ms":                   "Topic.MaxCompactionLagMs",
	"topic:min.cleanable.dirty.ratio":               "Topic.MinCleanableDirtyRatio",
	"topic:min.compaction.lag.ms":                   "Topic.MinCompactionLagMs",
	"topic:flush.messages":                          "Topic.FlushMessages",
	"topic:flush.ms":                                "Topic.FlushMs",
	"topic:index.interval.bytes":                    "Topic.IndexIntervalBytes",
	"topic:max.message.bytes":                       "Topic.MaxMessageBytes",
	"topic:message.timestamp.after.max.ms":          "Topic.MessageTimestampAfterMaxMs",
	"topic:message.timestamp.before.max.ms":         "Topic.MessageTimestampBeforeMaxMs",
	"topic:message.timestamp.difference.max.ms":     "config: folded into Topic.MessageTimestampBeforeMaxMs/AfterMaxMs when they are left at their defaults",
	"topic:unclean.leader.election.enable":          "raw: controller/unclean.go",
	"topic:message.timestamp.type":                  "Topic.LogAppendTime",
	"topic:min.insync.replicas":                     "Topic.MinInSyncReplicas",
	"topic:remote.storage.enable":                   "config: only false is accepted",
	"topic:retention.bytes":                         "Topic.RetentionBytes",
	"topic:retention.ms":                            "Topic.RetentionMs",
	"topic:segment.bytes":                           "Topic.SegmentBytes",
	"topic:segment.index.bytes":                     "Topic.SegmentIndexBytes",
	"topic:segment.jitter.ms":                       "Topic.SegmentJitterMs",
	"topic:segment.ms":                              "Topic.SegmentMs",
}

func TestEveryConfigReadOrUnused(t *testing.T) {
	refs := configFieldRefs(t)
	defs := map[string]Def{}
	for _, d := range Defs() {
		key := d.Name
		if d.Scope == ScopeTopic {
			key = "topic:" + d.Name
		}
		defs[key] = d
	}
	for key, d := range defs {
		how, ok := readBy[key]
		switch {
		case d.Ignored && ok:
			t.Errorf("%s is marked unused but readBy says %q", key, how)
		case d.Ignored:
		case !ok:
			t.Errorf("%s is neither marked unused nor listed in readBy with the code that reads it", key)
		}
	}
	for key, how := range readBy {
		if _, ok := defs[key]; !ok {
			t.Errorf("readBy lists %s, which is not in the table", key)
			continue
		}
		kind, rest, _ := strings.Cut(how, ".")
		switch {
		case kind == "Broker" || kind == "Topic":
			typ := reflect.TypeOf(Broker{})
			if kind == "Topic" {
				typ = reflect.TypeOf(Topic{})
			}
			if _, ok := typ.FieldByName(rest); !ok {
				t.Errorf("%s: %s has no field %s", key, kind, rest)
			} else if !refs[rest] {
				t.Errorf("%s: nothing outside package config reads %s.%s", key, kind, rest)
			}
		case strings.HasPrefix(how, "via topic:"):
			topic := strings.TrimPrefix(how, "via topic:")
			td, ok := defs["topic:"+topic]
			if !ok || td.Synonym == "" || !contains(brokerSynonyms(td.Synonym), key) {
				t.Errorf("%s: not in the broker synonyms of topic config %s", key, topic)
			} else if h := readBy["topic:"+topic]; !strings.HasPrefix(h, "Topic.") && !strings.HasPrefix(h, "config: ") && !strings.HasPrefix(h, "raw: ") {
				t.Errorf("%s: its topic config %s is not read (%q)", key, topic, h)
			}
		case strings.HasPrefix(how, "raw: "):
			name := strings.TrimPrefix(key, "topic:")
			src, err := os.ReadFile(filepath.Join("..", strings.TrimPrefix(how, "raw: ")))
			if err != nil || !strings.Contains(string(src), strconv.Quote(name)) {
				t.Errorf("%s: %s does not read %q (%v)", key, how, name, err)
			}
		case strings.HasPrefix(how, "config: "):
		default:
			t.Errorf("%s: readBy %q is none of the known forms", key, how)
		}
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// configFieldRefs returns the identifiers selected (x.Name) in the
// non-test Go files of the packages outside config that import it: the
// fields of Broker and Topic that code reads. (Field names shared with
// other types of those packages could hide an unread field; none are
// shared today but the log.Config ones, which only package log selects.)
func configFieldRefs(t *testing.T) map[string]bool {
	t.Helper()
	const self = "github.com/brook-mq/brook/config"
	sel := regexp.MustCompile(`\.([A-Z][A-Za-z0-9]*)\b`)
	byDir := map[string][]string{}
	importers := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "config", "testdata", "vendor", ".git", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		byDir[dir] = append(byDir[dir], path)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == self {
				importers[dir] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]bool{}
	for dir := range importers {
		for _, path := range byDir[dir] {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range sel.FindAllStringSubmatch(string(src), -1) {
				refs[m[1]] = true
			}
		}
	}
	return refs
}
