package kcat

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// TestKcatSASLSSL: librdkafka over SASL_SSL (the broker's host name
// checked against its certificate, then SASL) with each of
// harness.SASLSSLMechanisms: metadata, produce with acks=all, consume.
func TestKcatSASLSSL(t *testing.T) {
	env := harness.StartSASLSSL(t, brookBin, nil)
	const topic = "compat-kcat-sasl-ssl"
	createTopic(t, kadm.NewClient(testutil.Client(t, env.Addr())), topic, 1)
	for _, mech := range harness.SASLSSLMechanisms() {
		t.Run(mech, func(t *testing.T) {
			args := append([]string{"-b", env.SSLAddr, "-X", "ssl.ca.location=" + env.CAFile},
				kcatSASLOver("SASL_SSL", mech, harness.PasswordFor(mech))...)
			out, errOut := env.Kcat(nil, append(args, "-L", "-t", topic)...)
			if want := "broker 0 at " + env.SSLAddr; !strings.Contains(out, want) {
				env.Errorf(out, errOut, "kcat -L over SASL_SSL %s: output lacks %q", mech, want)
			}
			value := "value-" + mech
			env.Kcat(strings.NewReader(value+"\n"), append(args, "-P", "-t", topic, "-X", "acks=all")...)
			out, errOut = env.Kcat(nil, append(args, "-C", "-t", topic, "-o", "beginning", "-e", "-q")...)
			if !strings.Contains(out, value) {
				env.Errorf(out, errOut, "kcat -C over SASL_SSL %s: %q not read", mech, value)
			}
		})
	}
}
