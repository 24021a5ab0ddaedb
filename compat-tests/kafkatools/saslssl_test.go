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
			toolsRoundTrip(env.Env, env.SSLAddr, env.JavaClientConfig(mech), mech, "compat-sasl-ssl-"+strings.ToLower(mech))
		})
	}
}
