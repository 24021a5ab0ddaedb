package config

import (
	"errors"
	"strings"
	"testing"
)

// kafkaDynamicBrokerConfigs is Kafka 3.9's DynamicBrokerConfig.AllDynamicConfigs
// with each config's update mode (dynamicConfigUpdateModes): per-broker for
// DynamicSecurityConfigs and DynamicListenerConfig except the cluster-level
// listener configs, cluster-wide for everything else.
var kafkaDynamicBrokerConfigs = map[string]Update{
	// DynamicSecurityConfigs (SslConfigs.RECONFIGURABLE_CONFIGS).
	"ssl.keystore.type": PerBroker, "ssl.keystore.location": PerBroker, "ssl.keystore.password": PerBroker,
	"ssl.key.password": PerBroker, "ssl.truststore.type": PerBroker, "ssl.truststore.location": PerBroker,
	"ssl.truststore.password": PerBroker, "ssl.keystore.certificate.chain": PerBroker, "ssl.keystore.key": PerBroker,
	"ssl.truststore.certificates": PerBroker,

	// LogCleaner.ReconfigurableConfigs.
	"log.cleaner.threads": ClusterWide, "log.cleaner.dedupe.buffer.size": ClusterWide,
	"log.cleaner.io.buffer.load.factor": ClusterWide, "log.cleaner.io.buffer.size": ClusterWide,
	"message.max.bytes": ClusterWide, "log.cleaner.io.max.bytes.per.second": ClusterWide,
	"log.cleaner.backoff.ms": ClusterWide,

	// DynamicLogConfig: the broker synonyms of the topic configs, but
	// log.message.format.version.
	"log.segment.bytes": ClusterWide, "log.roll.ms": ClusterWide, "log.roll.jitter.ms": ClusterWide,
	"log.index.size.max.bytes": ClusterWide, "log.flush.interval.messages": ClusterWide,
	"log.flush.interval.ms": ClusterWide, "log.retention.bytes": ClusterWide, "log.retention.ms": ClusterWide,
	"log.index.interval.bytes": ClusterWide, "log.cleaner.delete.retention.ms": ClusterWide,
	"log.cleaner.min.compaction.lag.ms": ClusterWide, "log.cleaner.max.compaction.lag.ms": ClusterWide,
	"log.segment.delete.delay.ms": ClusterWide, "log.cleaner.min.cleanable.ratio": ClusterWide,
	"log.cleanup.policy": ClusterWide, "unclean.leader.election.enable": ClusterWide,
	"min.insync.replicas": ClusterWide, "compression.type": ClusterWide, "compression.gzip.level": ClusterWide,
	"compression.lz4.level": ClusterWide, "compression.zstd.level": ClusterWide, "log.preallocate": ClusterWide,
	"log.message.timestamp.type": ClusterWide, "log.message.timestamp.difference.max.ms": ClusterWide,
	"log.message.timestamp.before.max.ms": ClusterWide, "log.message.timestamp.after.max.ms": ClusterWide,
	"log.message.downconversion.enable": ClusterWide, "log.local.retention.ms": ClusterWide,
	"log.local.retention.bytes": ClusterWide,

	// DynamicThreadPool.
	"num.io.threads": ClusterWide, "num.replica.fetchers": ClusterWide,
	"num.recovery.threads.per.data.dir": ClusterWide, "background.threads": ClusterWide,

	"metric.reporters": ClusterWide,

	// DynamicListenerConfig.
	"advertised.listeners": PerBroker, "listeners": PerBroker, "listener.security.protocol.map": PerBroker,
	"principal.builder.class": PerBroker, "ssl.protocol": PerBroker, "ssl.provider": PerBroker,
	"ssl.cipher.suites": PerBroker, "ssl.enabled.protocols": PerBroker, "ssl.keymanager.algorithm": PerBroker,
	"ssl.trustmanager.algorithm": PerBroker, "ssl.endpoint.identification.algorithm": PerBroker,
	"ssl.secure.random.implementation": PerBroker, "ssl.client.auth": PerBroker, "ssl.engine.factory.class": PerBroker,
	"sasl.mechanism.inter.broker.protocol": PerBroker, "sasl.jaas.config": PerBroker,
	"sasl.enabled.mechanisms": PerBroker, "sasl.kerberos.service.name": PerBroker,
	"sasl.kerberos.kinit.cmd": PerBroker, "sasl.kerberos.ticket.renew.window.factor": PerBroker,
	"sasl.kerberos.ticket.renew.jitter": PerBroker, "sasl.kerberos.min.time.before.relogin": PerBroker,
	"sasl.kerberos.principal.to.local.rules": PerBroker, "sasl.login.refresh.window.factor": PerBroker,
	"sasl.login.refresh.window.jitter": PerBroker, "sasl.login.refresh.min.period.seconds": PerBroker,
	"sasl.login.refresh.buffer.seconds": PerBroker,
	"max.connections":                   ClusterWide, "max.connection.creation.rate": ClusterWide, "num.network.threads": ClusterWide,

	// SocketServer.ReconfigurableConfigs.
	"max.connections.per.ip": ClusterWide, "max.connections.per.ip.overrides": ClusterWide,

	// DynamicProducerStateManagerConfig.
	"producer.id.expiration.ms": ClusterWide, "transaction.partition.verification.enable": ClusterWide,

	// DynamicRemoteLogConfig.
	"remote.log.index.file.cache.total.size.bytes": ClusterWide, "remote.fetch.max.wait.ms": ClusterWide,
	"remote.log.manager.copy.max.bytes.per.second":  ClusterWide,
	"remote.log.manager.fetch.max.bytes.per.second": ClusterWide,
}

// kafkaBrokerQuotaConfigs are the other dynamic broker configs of Kafka 3.9
// (DynamicConfig.Broker's QuotaConfigs.brokerQuotaConfigs): per broker.
var kafkaBrokerQuotaConfigs = []string{
	"leader.replication.throttled.rate", "follower.replication.throttled.rate",
	"replica.alter.log.dirs.io.max.bytes.per.second",
}

// definedElsewhere are dynamic configs another branch adds to the table
// (the connection limits); they may be missing here.
var definedElsewhere = map[string]bool{"max.connections.per.ip.overrides": true}

func TestKafkaDynamicConfigsAccepted(t *testing.T) {
	tab := newTable()
	for name, mode := range kafkaDynamicBrokerConfigs {
		d, ok := tab.broker[name]
		if !ok {
			if !definedElsewhere[name] {
				t.Errorf("Kafka's dynamic broker config %s is not in the table", name)
			}
			continue
		}
		if d.Update != mode {
			t.Errorf("%s: update mode %s, Kafka's is %s", name, d.Update, mode)
		}
	}
	quota := map[string]bool{}
	for _, n := range kafkaBrokerQuotaConfigs {
		quota[n] = true
	}
	for name, d := range tab.broker {
		if _, ok := kafkaDynamicBrokerConfigs[name]; d.Update != ReadOnly && !ok && !quota[name] {
			t.Errorf("%s is %s in the table but not dynamic in Kafka 3.9", name, d.Update)
		}
	}
	// Each is accepted by a dynamic update at its level (per-broker ones
	// only for a broker id; the store configs only with a listener prefix).
	b := mustBroker(t, nil)
	for name := range kafkaDynamicBrokerConfigs {
		d, ok := tab.broker[name]
		if !ok {
			continue
		}
		key := name
		if d.ListenerOnly {
			key = "listener.name.external." + name
		}
		v, _ := b.Value(name)
		if !d.HasDefault || d.Type == Password {
			v = sampleValue(d.Type)
		}
		if _, err := ValidateBrokerUpdate(map[string]string{key: v}, true); err != nil {
			t.Errorf("per-broker update of %s=%q: %v", key, v, err)
		}
		_, err := ValidateBrokerUpdate(map[string]string{key: v}, false)
		if wantOK := d.Update == ClusterWide; wantOK != (err == nil) {
			t.Errorf("cluster default update of %s (%s): err = %v", key, d.Update, err)
		}
	}
}

func sampleValue(t Type) string {
	switch t {
	case Int, Short, Long:
		return "1"
	case Double:
		return "0.5"
	case Boolean:
		return "true"
	}
	return "x"
}

func TestListenerPrefixedConfigs(t *testing.T) {
	tests := []struct {
		key, value string
		perBroker  bool
		want       error
	}{
		{"sasl.kerberos.min.time.before.relogin", "120000", true, nil},
		{"listener.name.internal.sasl.kerberos.min.time.before.relogin", "120000", true, nil},
		{"listener.name.internal.ssl.keystore.location", "/etc/ks.jks", true, nil},
		{"listener.name.internal.ssl.keystore.location", "/etc/ks.jks", false, ErrReadOnly},
		{"ssl.keystore.location", "/etc/ks.jks", true, ErrReadOnly},
		{"listener.name.internal.plain.sasl.jaas.config", "x required;", true, nil},
		{"listener.name.internal.scram-sha-256.connections.max.reauth.ms", "1000", true, nil},
		{"listener.name.internal.max.connections", "100", false, nil},
		{"listener.name.internal.num.network.threads", "4", false, nil},
		{"listener.name.internal.ssl.client.auth", "sometimes", true, ErrInvalidValue},
		{"listener.name.internal.log.retention.ms", "1", true, ErrUnknownConfig},
		{"listener.name..ssl.protocol", "TLSv1.2", true, ErrUnknownConfig},
	}
	for _, tt := range tests {
		_, err := ValidateBrokerUpdate(map[string]string{tt.key: tt.value}, tt.perBroker)
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("ValidateBrokerUpdate(%s=%s, perBroker %v) = %v, want %v", tt.key, tt.value, tt.perBroker, err, tt.want)
		}
		if tt.want == ErrInvalidValue && (err == nil || !strings.Contains(err.Error(), tt.key)) {
			t.Errorf("error %v does not name %s", err, tt.key)
		}
	}

	// Statically too: described; the TLS one applies to its listener,
	// the other is accepted with a warning.
	b, warnings, err := fromMap(map[string]string{
		"log.dirs": "/tmp/x", "listener.name.internal.ssl.keystore.password": "secret",
		"listener.name.internal.max.connections": "10",
	}, fakeHost)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "listener.name.internal.max.connections") {
		t.Errorf("warnings %q, want one for the listener override Brook does not apply", warnings)
	}
	d, err := b.WithDynamic(map[string]string{"listener.name.internal.ssl.client.auth": "required"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]ConfigEntry{}
	for _, e := range d.BrokerEntries() {
		got[e.Name] = e
	}
	if e := got["listener.name.internal.ssl.keystore.password"]; !e.Sensitive || e.Value != "" || e.Source != SourceStaticBroker {
		t.Errorf("static password override entry %+v", e)
	}
	if e := got["listener.name.internal.ssl.client.auth"]; e.Value != "required" || e.Source != SourceDynamicBroker || e.ReadOnly {
		t.Errorf("dynamic override entry %+v", e)
	}
	if e := got["listener.name.internal.max.connections"]; e.Value != "10" || e.Type != Int {
		t.Errorf("static max.connections override entry %+v", e)
	}
}
