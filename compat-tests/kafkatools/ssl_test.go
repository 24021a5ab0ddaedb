package kafkatools

import (
	"slices"
	"strings"
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// TestToolsSSL: Apache Kafka's kafka-topics, console producer and console
// consumer over an SSL listener that requires client certificates, with a
// PKCS12 key store and a JKS trust store (--command-config); the broker's
// own key store is a JKS made by keytool. Java checks the broker's host
// name (ssl.endpoint.identification.algorithm=https by default).
func TestToolsSSL(t *testing.T) {
	env := harness.StartTLS(t, brookBin, nil)
	cfg := env.JavaClientConfig()
	bs := []string{"--bootstrap-server", env.SSLAddr, "--command-config", cfg}
	const topic = "compat-tools-ssl"

	out, errOut := env.Tool("kafka-topics.sh", append(bs, "--create", "--topic", topic, "--partitions", "2", "--replication-factor", "1")...)
	if !strings.Contains(out, "Created topic "+topic) {
		env.Fatalf(out, errOut, "kafka-topics --create over SSL: no confirmation")
	}

	lines := []string{"k1\tone", "k2\ttwo", "k3\tthree"}
	env.ToolStdin(strings.NewReader(strings.Join(lines, "\n")+"\n"), "kafka-console-producer.sh",
		append(bs[:2:2], "--command-config", cfg, "--topic", topic, "--command-property", "acks=all",
			"--reader-property", "parse.key=true", "--reader-property", "key.separator=\t")...)
	out, errOut = env.Tool("kafka-console-consumer.sh", append(bs, "--topic", topic, "--from-beginning",
		"--max-messages", "3", "--timeout-ms", "30000",
		"--formatter-property", "print.key=true", "--formatter-property", "key.separator=\t")...)
	got := harness.Lines(out)
	slices.Sort(got)
	if !slices.Equal(got, lines) {
		env.Errorf(out, errOut, "console consumer over SSL: %q, want %q", got, lines)
	}
}
