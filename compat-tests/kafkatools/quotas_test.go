package kafkatools

import (
	"strings"
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// TestClientQuotas sets and describes user and client-id quotas with
// kafka-configs (AlterClientQuotas, DescribeClientQuotas), as against Kafka.
func TestClientQuotas(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	tool := func(args ...string) (string, string) {
		return env.Tool("kafka-configs.sh", append([]string{"--bootstrap-server", env.Addr()}, args...)...)
	}
	out, errOut := tool("--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
	if !strings.Contains(out, "Completed updating config") {
		env.Fatalf(out, errOut, "--alter users alice did not complete")
	}
	out, errOut = tool("--describe", "--entity-type", "users", "--entity-name", "alice")
	if !strings.Contains(out, "Quota configs for user-principal 'alice' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0") {
		env.Fatalf(out, errOut, "--describe users alice: quotas not shown as Kafka shows them")
	}

	out, errOut = tool("--alter", "--entity-type", "clients", "--entity-default", "--add-config", "request_percentage=200")
	if !strings.Contains(out, "Completed updating default config") {
		env.Fatalf(out, errOut, "--alter clients --entity-default did not complete")
	}
	out, errOut = tool("--describe", "--entity-type", "clients", "--entity-default")
	if !strings.Contains(out, "request_percentage=200.0") {
		env.Fatalf(out, errOut, "--describe clients --entity-default: request_percentage not shown")
	}

	out, errOut = tool("--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "consumer_byte_rate")
	if !strings.Contains(out, "Completed updating config") {
		env.Fatalf(out, errOut, "--delete-config did not complete")
	}
	out, errOut = tool("--describe", "--entity-type", "users", "--entity-name", "alice")
	if !strings.Contains(out, "are producer_byte_rate=1048576.0") || strings.Contains(out, "consumer_byte_rate") {
		env.Fatalf(out, errOut, "after --delete-config consumer_byte_rate: still shown or producer_byte_rate lost")
	}

	// The ip entity (KIP-612), stored under /config/ips as Kafka's
	// ZooKeeper mode keeps it.
	out, errOut = tool("--alter", "--entity-type", "ips", "--entity-name", "127.0.0.1", "--add-config", "connection_creation_rate=10")
	if !strings.Contains(out, "Completed updating config") {
		env.Fatalf(out, errOut, "--alter ips 127.0.0.1 did not complete")
	}
	out, errOut = tool("--describe", "--entity-type", "ips", "--entity-name", "127.0.0.1")
	if !strings.Contains(out, "connection_creation_rate=10") {
		env.Fatalf(out, errOut, "--describe ips 127.0.0.1: connection_creation_rate not shown")
	}
}
