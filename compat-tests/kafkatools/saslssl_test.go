package kafkatools

import (
	"strings"
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// TestSASLSSLTools runs kafka-topics (--command-config), the console
// producer and the console consumer over SASL_SSL (a JKS trust store,
// then SASL) with each of harness.SASLSSLMechanisms, Kafka 4.x's tools.
func TestSASLSSLTools(t *testing.T) {
	env := harness.StartSASLSSL(t, brookBin, nil)
	for _, mech := range harness.SASLSSLMechanisms() {
		t.Run(mech, func(t *testing.T) {
			cfg := env.JavaClientConfig(mech)
			topic := "compat-sasl-ssl-" + strings.ToLower(mech)
			env.Tool("kafka-topics.sh", "--bootstrap-server", env.SSLAddr, "--command-config", cfg, "--create", "--topic", topic, "--partitions", "1")
			env.ToolStdin(strings.NewReader("hello "+mech+"\n"), "kafka-console-producer.sh",
				"--bootstrap-server", env.SSLAddr, "--command-config", cfg, "--topic", topic)
			out, errOut := env.Tool("kafka-console-consumer.sh", "--bootstrap-server", env.SSLAddr, "--command-config", cfg,
				"--topic", topic, "--from-beginning", "--max-messages", "1", "--timeout-ms", "60000")
			if !strings.Contains(out, "hello "+mech) {
				env.Errorf(out, errOut, "console consumer over SASL_SSL %s: record not read", mech)
			}
		})
	}
}
