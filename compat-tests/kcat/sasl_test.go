package kcat

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// kcatSASL are librdkafka's settings for mechanism against a
// SASL_PLAINTEXT listener; OAUTHBEARER uses librdkafka's built-in
// unsecured JWT.
func kcatSASL(mechanism, password string) []string {
	return kcatSASLOver("SASL_PLAINTEXT", mechanism, password)
}

// kcatSASLOver is kcatSASL for a listener of protocol (SASL_PLAINTEXT or
// SASL_SSL).
func kcatSASLOver(protocol, mechanism, password string) []string {
	args := []string{"-X", "security.protocol=" + protocol, "-X", "sasl.mechanism=" + mechanism}
	if mechanism == "OAUTHBEARER" {
		return append(args, "-X", "enable.sasl.oauthbearer.unsecure.jwt=true", "-X", "sasl.oauthbearer.config=principal="+harness.OAuthUser)
	}
	return append(args, "-X", "sasl.username="+harness.UserFor(mechanism), "-X", "sasl.password="+password)
}

// TestKcatSASL produces, consumes and reads metadata with kcat over
// SASL_PLAINTEXT with each mechanism (librdkafka 2.0's SCRAM sends the
// client nonce twice, which Brook accepts as Kafka 3.9 does), and checks
// that a wrong password is refused.
func TestKcatSASL(t *testing.T) {
	env := harness.StartSASL(t, brookBin, nil)
	adm := kadm.NewClient(testutil.Client(t, env.Addr()))
	const topic = "compat-kcat-sasl"
	createTopic(t, adm, topic, 1)
	for _, mech := range harness.SASLMechanisms {
		t.Run(mech, func(t *testing.T) {
			sasl := kcatSASL(mech, harness.PasswordFor(mech))
			out, errOut := env.Kcat(nil, append([]string{"-b", env.SASLAddr, "-L", "-t", topic}, sasl...)...)
			if !strings.Contains(out, `topic "`+topic+`" with 1 partitions`) {
				env.Errorf(out, errOut, "kcat -L over %s: no topic", mech)
			}
			value := "value-" + mech
			env.Kcat(strings.NewReader(value+"\n"), append([]string{"-b", env.SASLAddr, "-P", "-t", topic, "-X", "acks=all"}, sasl...)...)
			out, errOut = env.Kcat(nil, append([]string{"-b", env.SASLAddr, "-C", "-t", topic, "-o", "beginning", "-e", "-q"}, sasl...)...)
			if !strings.Contains(out, value) {
				env.Errorf(out, errOut, "kcat -C over %s: %q not read", mech, value)
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		out, errOut, err := testutil.Kcat(t, nil, append([]string{"-b", env.SASLAddr, "-L", "-m", "5"}, kcatSASL("SCRAM-SHA-512", "wrong")...)...)
		if err == nil || !strings.Contains(errOut, "Authentication failed") {
			env.Errorf(out, errOut, "kcat with a wrong password: %v, want an authentication failure", err)
		}
	})
}
