package config

import (
	"slices"
	"testing"
)

func TestEnvName(t *testing.T) {
	for _, c := range []struct {
		variable, name string
		ok             bool
	}{
		{"KAFKA_CFG_LOG_DIRS", "log.dirs", true},
		{"KAFKA_CFG_ZOOKEEPER_CONNECT", "zookeeper.connect", true},
		{"KAFKA_CFG_BROOK_METRICS_LISTENER", "brook.metrics.listener", true},
		{"KAFKA_ADVERTISED_LISTENERS", "advertised.listeners", true},
		{"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "listener.security.protocol.map", true},
		{"KAFKA_LISTENER_NAME_INTERNAL_SSL_KEYSTORE__TYPE", "listener.name.internal.ssl.keystore_type", true},
		{"KAFKA_SOME___DASHED", "some-dashed", true},
		{"KAFKA_BROOK_LOG_FORMAT", "brook.log.format", true},
		{"KAFKA_HEAP_OPTS", "", false},
		{"KAFKA_OPTS", "", false},
		{"KAFKA_JMX_PORT", "", false},
		{"KAFKA_LOG4J_ROOT_LOGLEVEL", "", false},
		{"KAFKA_HOME", "", false},
		{"KAFKA_", "", false},
		{"KAFKA_CFG_", "", false},
		{"PATH", "", false},
		{"kafka_cfg_log_dirs", "", false},
	} {
		name, ok := EnvName(c.variable)
		if name != c.name || ok != c.ok {
			t.Errorf("EnvName(%s) = %q, %v; want %q, %v", c.variable, name, ok, c.name, c.ok)
		}
	}
}

func TestFromEnv(t *testing.T) {
	env := []string{
		"PATH=/usr/bin",
		"KAFKA_CFG_BROKER_ID=1",
		"KAFKA_BROKER_ID=7", // KAFKA_CFG_ wins, in either order
		"KAFKA_NUM_PARTITIONS=3",
		"KAFKA_CFG_ZOOKEEPER_CONNECT=zk:2181/brook",
		"KAFKA_HEAP_OPTS=-Xmx1g",
		"KAFKA_CFG_LISTENERS=PLAINTEXT://:9092,EXTERNAL://:19092",
		"MALFORMED",
	}
	want := []string{"broker.id=1", "listeners=PLAINTEXT://:9092,EXTERNAL://:19092", "num.partitions=3", "zookeeper.connect=zk:2181/brook"}
	if got := FromEnv(env); !slices.Equal(got, want) {
		t.Errorf("FromEnv = %v, want %v", got, want)
	}
	slices.Reverse(env)
	if got := FromEnv(env); !slices.Equal(got, want) {
		t.Errorf("FromEnv reversed = %v, want %v", got, want)
	}
}
