package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// StartKafka39 starts an Apache Kafka 3.9 broker in ZooKeeper mode (the jars
// of scripts/deps.sh --kafka-3.9, run through compat-tests/bin's
// kafka-run-class.sh) listening on 127.0.0.1:port, with server.properties
// made of props (which must name broker.id, log.dirs and
// zookeeper.connect), and returns once it answers ApiVersions. The
// returned Process is driven like a Brook one (Stop, Kill9, Start); its
// log holds Kafka's own logging at INFO. The wrapper execs the JVM, so
// the Process is the broker itself and Kill9 crashes it; the JVM's exit
// status 143 after SIGTERM counts as a clean stop.
func StartKafka39(t testing.TB, props map[string]string, port int) *Process {
	t.Helper()
	p := NewKafka39(t, props, port)
	if err := p.Start(); err != nil {
		t.Fatalf("start kafka: %v\n--- kafka log tail ---\n%s", err, p.LogTail(40))
	}
	return p
}

// NewKafka39 is StartKafka39's broker, not started yet: Start starts it
// and returns the failure for the caller to judge (a Kafka broker exits
// at startup when its new ZooKeeper session expires before it
// registered).
func NewKafka39(t testing.TB, props map[string]string, port int) *Process {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{
		"listeners":                        fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
		"group.initial.rebalance.delay.ms": "0",
	}
	for k, v := range props {
		all[k] = v
	}
	propPath := filepath.Join(t.TempDir(), "server.properties")
	if err := writeProperties(propPath, all); err != nil {
		t.Fatalf("start kafka: %v", err)
	}
	env := append(os.Environ(),
		"BROOK_KAFKA_HOME="+KafkaRelease(t, "kafka3"),
		"BROOK_TOOL_LOG_LEVEL=info",
		"KAFKA_HEAP_OPTS=-Xmx512m",
	)
	p := NewBrookCommand(t, filepath.Join(root, "compat-tests", "bin", "kafka-run-class.sh"),
		[]string{"kafka.Kafka", propPath}, env, port)
	p.AcceptTermStatus(jvmTermStatus)
	return p
}

// jvmTermStatus is a JVM's exit status after SIGTERM: 128 + 15.
const jvmTermStatus = 143
