package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func fakeHost() (string, error) { return "broker1.example.test", nil }

func mustBroker(t *testing.T, m map[string]string) *Broker {
	t.Helper()
	b, _, err := fromMap(m, fakeHost)
	if err != nil {
		t.Fatalf("fromMap(%v): %v", m, err)
	}
	return b
}

func TestBrokerDefaults(t *testing.T) {
	b := mustBroker(t, nil)
	checks := []struct {
		name      string
		got, want any
	}{
		{"BrokerID", b.BrokerID, int32(-1)},
		{"Listeners", b.Listeners, []Listener{{Name: "PLAINTEXT", Host: "", Port: 9092}}},
		{"AdvertisedListeners", b.AdvertisedListeners, []Listener{{Name: "PLAINTEXT", Host: "broker1.example.test", Port: 9092}}},
		{"InterBrokerListenerName", b.InterBrokerListenerName, "PLAINTEXT"},
		{"LogDirs", b.LogDirs, []string{"/tmp/kafka-logs"}},
		{"NumPartitions", b.NumPartitions, int32(1)},
		{"DefaultReplicationFactor", b.DefaultReplicationFactor, int16(1)},
		{"AutoCreateTopicsEnable", b.AutoCreateTopicsEnable, true},
		{"DeleteTopicEnable", b.DeleteTopicEnable, true},
		{"MessageMaxBytes", b.MessageMaxBytes, int32(1048588)},
		{"SocketRequestMaxBytes", b.SocketRequestMaxBytes, int32(104857600)},
		{"LogRetentionCheckInterval", b.LogRetentionCheckInterval, 5 * time.Minute},
		{"LogFlushSchedulerIntervalMs", b.LogFlushSchedulerIntervalMs, int64(9223372036854775807)},
		{"LogFlushOffsetCheckpointInterval", b.LogFlushOffsetCheckpointInterval, time.Minute},
		{"OffsetsTopicNumPartitions", b.OffsetsTopicNumPartitions, int32(50)},
		{"OffsetsTopicReplicationFactor", b.OffsetsTopicReplicationFactor, int16(3)},
		{"OffsetsRetention", b.OffsetsRetention, 7 * 24 * time.Hour},
		{"GroupInitialRebalanceDelay", b.GroupInitialRebalanceDelay, 3 * time.Second},
		{"GroupMinSessionTimeout", b.GroupMinSessionTimeout, 6 * time.Second},
		{"GroupMaxSessionTimeout", b.GroupMaxSessionTimeout, 30 * time.Minute},
		{"GroupMaxSize", b.GroupMaxSize, int32(2147483647)},
		{"TransactionMaxTimeout", b.TransactionMaxTimeout, 15 * time.Minute},
		{"TransactionalIDExpiration", b.TransactionalIDExpiration, 7 * 24 * time.Hour},
		{"MinInSyncReplicas", b.MinInSyncReplicas, int32(1)},
		{"UncleanLeaderElectionEnable", b.UncleanLeaderElectionEnable, false},
		{"ReplicaLagTimeMax", b.ReplicaLagTimeMax, 30 * time.Second},
		{"ZookeeperConnect", b.ZookeeperConnect, ""},
		{"ZookeeperSessionTimeout", b.ZookeeperSessionTimeout, 18 * time.Second},
		{"ZookeeperConnectionTimeout", b.ZookeeperConnectionTimeout, 18 * time.Second},
		{"ControlledShutdownEnable", b.ControlledShutdownEnable, true},
		{"AutoLeaderRebalanceEnable", b.AutoLeaderRebalanceEnable, true},
		{"ReservedBrokerMaxID", b.ReservedBrokerMaxID, int32(1000)},
		{"QueuedMaxRequests", b.QueuedMaxRequests, int32(500)},
		{"LeaderImbalanceCheckInterval", b.LeaderImbalanceCheckInterval, 5 * time.Minute},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestTopicDefaults(t *testing.T) {
	b := mustBroker(t, nil)
	got, err := b.Topic(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Topic{
		SegmentBytes: 1 << 30, SegmentMs: 604800000, SegmentIndexBytes: 10485760, IndexIntervalBytes: 4096,
		RetentionMs: 604800000, RetentionBytes: -1, FlushMessages: 9223372036854775807, FlushMs: 9223372036854775807,
		MaxMessageBytes: 1048588, FileDeleteDelayMs: 60000, Delete: true, CleanupPolicy: []string{"delete"},
		CompressionType: "producer", CompressionGzipLevel: -1, CompressionLz4Level: 9, CompressionZstdLevel: 3,
		MinInSyncReplicas: 1, DeleteRetentionMs: 86400000, MaxCompactionLagMs: 9223372036854775807,
		MinCleanableDirtyRatio: 0.5, MessageTimestampType: "CreateTime",
		MessageTimestampBeforeMaxMs: 9223372036854775807, MessageTimestampAfterMaxMs: 9223372036854775807,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Topic(nil) =\n%+v\nwant\n%+v", got, want)
	}
}

// The first broker key of a synonym chain that is set wins, converted to
// milliseconds.
func TestSynonymPrecedence(t *testing.T) {
	tests := []struct {
		name  string
		props map[string]string
		topic string
		want  string
	}{
		{"retention default", nil, "retention.ms", "604800000"},
		{"retention hours", map[string]string{"log.retention.hours": "24"}, "retention.ms", "86400000"},
		{"retention minutes over hours", map[string]string{"log.retention.hours": "24", "log.retention.minutes": "30"}, "retention.ms", "1800000"},
		{"retention ms over minutes", map[string]string{"log.retention.minutes": "30", "log.retention.ms": "1234"}, "retention.ms", "1234"},
		{"retention ms over all", map[string]string{"log.retention.hours": "1", "log.retention.minutes": "1", "log.retention.ms": "5"}, "retention.ms", "5"},
		{"retention negative hours is unlimited", map[string]string{"log.retention.hours": "-5"}, "retention.ms", "-1"},
		{"retention negative ms is unlimited", map[string]string{"log.retention.ms": "-7"}, "retention.ms", "-1"},
		{"roll default", nil, "segment.ms", "604800000"},
		{"roll hours", map[string]string{"log.roll.hours": "2"}, "segment.ms", "7200000"},
		{"roll ms over hours", map[string]string{"log.roll.hours": "2", "log.roll.ms": "99"}, "segment.ms", "99"},
		{"jitter hours", map[string]string{"log.roll.jitter.hours": "1"}, "segment.jitter.ms", "3600000"},
		{"jitter ms over hours", map[string]string{"log.roll.jitter.hours": "1", "log.roll.jitter.ms": "10"}, "segment.jitter.ms", "10"},
		{"flush.ms from scheduler", map[string]string{"log.flush.scheduler.interval.ms": "2000"}, "flush.ms", "2000"},
		{"flush.ms interval over scheduler", map[string]string{"log.flush.scheduler.interval.ms": "2000", "log.flush.interval.ms": "500"}, "flush.ms", "500"},
		{"max.message.bytes from message.max.bytes", map[string]string{"message.max.bytes": "2000000"}, "max.message.bytes", "2000000"},
		{"delete.retention.ms from cleaner", map[string]string{"log.cleaner.delete.retention.ms": "5"}, "delete.retention.ms", "5"},
		{"min.cleanable.dirty.ratio from cleaner ratio", map[string]string{"log.cleaner.min.cleanable.ratio": "0.25"}, "min.cleanable.dirty.ratio", "0.25"},
		{"no synonym keeps topic default", map[string]string{"remote.storage.enable": "true"}, "remote.storage.enable", "false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _, err := fromMap(tt.props, fakeHost)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.TopicValue(nil, tt.topic); got != tt.want {
				t.Errorf("TopicValue(%s) = %q, want %q", tt.topic, got, tt.want)
			}
			if got := b.TopicValue(map[string]string{tt.topic: "42"}, tt.topic); tt.topic != "min.cleanable.dirty.ratio" && tt.topic != "remote.storage.enable" && got != "42" {
				t.Errorf("override of %s = %q, want 42", tt.topic, got)
			}
		})
	}
}

func TestLoadOverridesWinOverFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.properties")
	file := "broker.id=3\nnum.partitions=4\nlog.dirs=/a,/b\nlog.retention.hours=1\nlisteners=PLAINTEXT://127.0.0.1:9092\n"
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	b, warnings, err := Load(path, []string{"num.partitions=8", "log.retention.ms=1000", "listeners = PLAINTEXT://127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %q, want none", warnings)
	}
	if b.BrokerID != 3 || b.NumPartitions != 8 {
		t.Errorf("BrokerID, NumPartitions = %d, %d; want 3, 8", b.BrokerID, b.NumPartitions)
	}
	if !reflect.DeepEqual(b.LogDirs, []string{"/a", "/b"}) {
		t.Errorf("LogDirs = %q", b.LogDirs)
	}
	if got := b.TopicValue(nil, "retention.ms"); got != "1000" {
		t.Errorf("retention.ms = %s, want 1000 (override log.retention.ms beats file log.retention.hours)", got)
	}
	if want := []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 0}}; !reflect.DeepEqual(b.Listeners, want) {
		t.Errorf("Listeners = %v, want %v", b.Listeners, want)
	}
}

func TestLoadErrors(t *testing.T) {
	if _, _, err := Load(filepath.Join(t.TempDir(), "missing.properties"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want ErrNotExist", err)
	}
	if _, _, err := Load("", []string{"novalue"}); !errors.Is(err, ErrSyntax) {
		t.Errorf("override without '=': err = %v, want ErrSyntax", err)
	}
	b, _, err := Load("", nil)
	if err != nil || b.NumPartitions != 1 {
		t.Errorf("Load(\"\", nil) = %v, %v; want defaults", b, err)
	}
}

func TestUnknownAndUnusedKeysWarn(t *testing.T) {
	b, warnings, err := fromMap(map[string]string{
		"no.such.key":         "1",
		"retention.ms":        "5", // a topic key in server.properties is unknown to the broker
		"num.network.threads": "4",
		"num.partitions":      "2",
		"process.roles":       "broker,controller",
	}, fakeHost)
	if err != nil {
		t.Fatal(err)
	}
	if b.NumPartitions != 2 {
		t.Errorf("NumPartitions = %d", b.NumPartitions)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"no.such.key", "retention.ms", "num.network.threads"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q do not mention %s", warnings, want)
		}
	}
	if !strings.Contains(joined, `"process.roles" belongs to KRaft mode`) {
		t.Errorf("warnings %q do not explain process.roles", warnings)
	}
	if strings.Contains(joined, "num.partitions") {
		t.Errorf("warnings %q mention a used key", warnings)
	}
}

func TestBadValuesNameKeyAndValue(t *testing.T) {
	tests := []struct{ key, value string }{
		{"num.partitions", "abc"},
		{"num.partitions", "0"},
		{"num.partitions", "99999999999"},
		{"auto.create.topics.enable", "yes"},
		{"log.segment.bytes", "13"},
		{"log.cleanup.policy", "delete,shred"},
		{"compression.type", "brotli"},
		{"compression.type", "GZIP"},
		{"log.message.timestamp.type", "createtime"},
		{"log.cleaner.min.cleanable.ratio", "1.5"},
		{"offsets.topic.replication.factor", "40000"},
		{"offsets.topic.replication.factor", "0"},
		{"security.inter.broker.protocol", "TLS"},
		{"compression.gzip.level", "0"},
		{"compression.lz4.level", "18"},
		{"log.message.format.version", "banana"},
		{"broker.id", "1001"},
		{"listeners", "PLAINTEXT:/:9092"},
		{"listeners", "PLAINTEXT://:99999"},
		{"listeners", "FOO://:9092"},
		{"listeners", "PLAINTEXT://:9092,PLAINTEXT://:9093"},
		{"advertised.listeners", "PLAINTEXT://0.0.0.0:9092"},
		{"advertised.listeners", "OTHER://h:1"},
		{"listener.security.protocol.map", "PLAINTEXT:NOPE"},
		{"inter.broker.listener.name", "MISSING"},
		{"log.dirs", " , "},
		{"offsets.topic.compression.codec", "9"},
		{"log.cleaner.dedupe.buffer.size", "1048576"},
		{"replica.fetch.wait.max.ms", "40000"},
		{"log.roll.ms", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			m := map[string]string{tt.key: tt.value}
			if tt.key == "advertised.listeners" && strings.HasPrefix(tt.value, "OTHER") {
				m["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"
			}
			_, _, err := fromMap(m, fakeHost)
			if err == nil {
				t.Fatalf("fromMap(%s=%s) succeeded", tt.key, tt.value)
			}
			if !errors.Is(err, ErrInvalidValue) {
				t.Errorf("error %v is not ErrInvalidValue", err)
			}
			msg := err.Error()
			// Cross-config errors may name the key that Kafka names
			// (log.roll.ms=0 is reported as the segment.ms it makes).
			if tt.key != "log.roll.ms" && !strings.Contains(msg, tt.key) {
				t.Errorf("error %q does not name key %s", msg, tt.key)
			}
			if tt.key == "log.roll.ms" && !strings.Contains(msg, "log.roll.ms") {
				t.Errorf("error %q does not name log.roll.ms", msg)
			}
			if !strings.Contains(msg, strings.TrimSpace(tt.value)) {
				t.Errorf("error %q does not show value %q", msg, tt.value)
			}
		})
	}
}

func TestValuesAreCanonical(t *testing.T) {
	b := mustBroker(t, map[string]string{
		"auto.create.topics.enable":       " FALSE ",
		"num.partitions":                  " +3",
		"log.cleanup.policy":              " compact , delete ",
		"log.cleaner.min.cleanable.ratio": "1",
		"log.dirs":                        "/d1",
	})
	for name, want := range map[string]string{
		"auto.create.topics.enable":           "false",
		"num.partitions":                      "3",
		"log.cleanup.policy":                  "compact,delete",
		"log.cleaner.min.cleanable.ratio":     "1.0",
		"log.cleaner.io.max.bytes.per.second": "1.7976931348623157E308",
	} {
		if got, _ := b.Value(name); got != want {
			t.Errorf("Value(%s) = %q, want %q", name, got, want)
		}
	}
	if b.AutoCreateTopicsEnable || b.NumPartitions != 3 {
		t.Errorf("typed fields not filled: %v %v", b.AutoCreateTopicsEnable, b.NumPartitions)
	}
	if got := b.TopicValue(nil, "cleanup.policy"); got != "compact,delete" {
		t.Errorf("cleanup.policy = %q", got)
	}
}

func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0", 0.5: "0.5", 1: "1.0", 0.9: "0.9", 1e7: "1.0E7", 1.5e7: "1.5E7", 0.001: "0.001",
		0.0001: "1.0E-4", 123456.5: "123456.5", -2: "-2.0", 1.7976931348623157e308: "1.7976931348623157E308",
	} {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %q, want %q", f, got, want)
		}
	}
}

func TestListeners(t *testing.T) {
	tests := []struct {
		name            string
		props           map[string]string
		listeners, adv  []Listener
		interBrokerName string
	}{
		{
			name:            "advertised falls back to listener host",
			props:           map[string]string{"listeners": "PLAINTEXT://10.1.2.3:9092"},
			listeners:       []Listener{{"PLAINTEXT", "10.1.2.3", 9092}},
			adv:             []Listener{{"PLAINTEXT", "10.1.2.3", 9092}},
			interBrokerName: "PLAINTEXT",
		},
		{
			name:            "empty host advertises canonical host name",
			props:           map[string]string{"listeners": "PLAINTEXT://:9092"},
			listeners:       []Listener{{"PLAINTEXT", "", 9092}},
			adv:             []Listener{{"PLAINTEXT", "broker1.example.test", 9092}},
			interBrokerName: "PLAINTEXT",
		},
		{
			name:            "0.0.0.0 listener must be advertised explicitly",
			props:           map[string]string{"listeners": "PLAINTEXT://0.0.0.0:9092", "advertised.listeners": "PLAINTEXT://kafka:9092"},
			listeners:       []Listener{{"PLAINTEXT", "0.0.0.0", 9092}},
			adv:             []Listener{{"PLAINTEXT", "kafka", 9092}},
			interBrokerName: "PLAINTEXT",
		},
		{
			name: "named listeners, lower-case names normalised, IPv6",
			props: map[string]string{
				"listeners":                      "internal://[::1]:9092,external://:9093",
				"advertised.listeners":           "INTERNAL://[::1]:9092,EXTERNAL://:9093",
				"listener.security.protocol.map": "INTERNAL:PLAINTEXT,external:plaintext",
				"inter.broker.listener.name":     "internal",
			},
			listeners:       []Listener{{"INTERNAL", "::1", 9092}, {"EXTERNAL", "", 9093}},
			adv:             []Listener{{"INTERNAL", "::1", 9092}, {"EXTERNAL", "broker1.example.test", 9093}},
			interBrokerName: "INTERNAL",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustBroker(t, tt.props)
			if !reflect.DeepEqual(b.Listeners, tt.listeners) {
				t.Errorf("Listeners = %v, want %v", b.Listeners, tt.listeners)
			}
			if !reflect.DeepEqual(b.AdvertisedListeners, tt.adv) {
				t.Errorf("AdvertisedListeners = %v, want %v", b.AdvertisedListeners, tt.adv)
			}
			if b.InterBrokerListenerName != tt.interBrokerName {
				t.Errorf("InterBrokerListenerName = %q, want %q", b.InterBrokerListenerName, tt.interBrokerName)
			}
		})
	}
	if got := (Listener{"A", "::1", 9}).Addr(); got != "[::1]:9" {
		t.Errorf("Addr = %q", got)
	}
}

func TestInterBrokerSettingsConflict(t *testing.T) {
	_, _, err := fromMap(map[string]string{
		"inter.broker.listener.name":     "PLAINTEXT",
		"security.inter.broker.protocol": "PLAINTEXT",
	}, fakeHost)
	if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), "only one of") {
		t.Errorf("err = %v, want a conflict error", err)
	}
	// Without inter.broker.listener.name the PLAINTEXT listener must exist.
	_, _, err = fromMap(map[string]string{
		"listeners":                      "CLIENT://:9092",
		"listener.security.protocol.map": "CLIENT:PLAINTEXT",
	}, fakeHost)
	if err == nil || !strings.Contains(err.Error(), "security.inter.broker.protocol") {
		t.Errorf("err = %v, want missing inter-broker listener", err)
	}
}

func TestBrokerIDGeneration(t *testing.T) {
	if _, _, err := fromMap(map[string]string{"broker.id.generation.enable": "false"}, fakeHost); err == nil {
		t.Error("broker.id=-1 with generation disabled was accepted")
	}
	b := mustBroker(t, map[string]string{"broker.id": "1000"})
	if b.BrokerID != 1000 {
		t.Errorf("BrokerID = %d", b.BrokerID)
	}
	b = mustBroker(t, map[string]string{"broker.id": "5000", "reserved.broker.max.id": "10000"})
	if b.BrokerID != 5000 {
		t.Errorf("BrokerID = %d", b.BrokerID)
	}
}

func TestHostnameFailure(t *testing.T) {
	boom := errors.New("no hostname")
	_, _, err := fromMap(nil, func() (string, error) { return "", boom })
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the hostname error", err)
	}
	// A listener with a host never asks for the host name.
	if _, _, err := fromMap(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092"}, func() (string, error) { return "", boom }); err != nil {
		t.Errorf("err = %v", err)
	}
}

// The keys of Kafka's sample ZooKeeper-mode server.properties all load
// without unknown-key warnings.
func TestSampleServerProperties(t *testing.T) {
	sample := `
# broker basics
broker.id=0
#listeners=PLAINTEXT://:9092
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kafka-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
#log.flush.interval.messages=10000
#log.flush.interval.ms=1000
log.retention.hours=168
#log.retention.bytes=1073741824
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
zookeeper.connect=localhost:2181
zookeeper.connection.timeout.ms=18000
group.initial.rebalance.delay.ms=0
`
	m, err := ParseProperties(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	b, warnings, err := fromMap(m, fakeHost)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		if strings.Contains(w, "unknown") {
			t.Errorf("warning %q", w)
		}
	}
	// The thread pool sizes have no effect in Brook; the transaction
	// state log settings of the sample do.
	ignored := []string{"num.io.threads", "num.network.threads"}
	if len(warnings) != len(ignored) {
		t.Errorf("warnings = %q, want one for each of %v", warnings, ignored)
	}
	for i, name := range ignored {
		if i < len(warnings) && !strings.Contains(warnings[i], name) {
			t.Errorf("warning %d = %q, want one for %s", i, warnings[i], name)
		}
	}
	if b.BrokerID != 0 || b.ZookeeperConnect != "localhost:2181" || b.OffsetsTopicReplicationFactor != 1 || b.GroupInitialRebalanceDelay != 0 {
		t.Errorf("broker = %+v", b)
	}
}
