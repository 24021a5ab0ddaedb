package franzgo

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// franzSASL is franz-go's mechanism for name with the harness's users;
// OAUTHBEARER sends an unsecured token, which Kafka's default validator
// takes.
func franzSASL(t *testing.T, name string) sasl.Mechanism {
	switch name {
	case "PLAIN":
		return plain.Auth{User: harness.PlainUser, Pass: harness.PlainPassword}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: harness.ScramUser, Pass: harness.ScramPassword}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: harness.ScramUser, Pass: harness.ScramPassword}.AsSha512Mechanism()
	case "OAUTHBEARER":
		return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
			return oauth.Auth{Token: harness.UnsecuredJWT(harness.OAuthUser)}, nil
		})
	}
	t.Fatalf("no franz-go mechanism %s", name)
	return nil
}

// TestFranzGoSASLSSL: franz-go over SASL_SSL (the broker's certificate and
// host name checked, then SASL) with each of harness.SASLSSLMechanisms: an
// admin call, acks=all produce and a consume.
func TestFranzGoSASLSSL(t *testing.T) {
	env := harness.StartSASLSSL(t, brookBin, nil)
	tlsCfg := &tls.Config{RootCAs: env.CA.Pool(), ServerName: "localhost"}
	for _, mech := range harness.SASLSSLMechanisms() {
		t.Run(mech, func(t *testing.T) {
			topic := "franzgo-sasl-ssl-" + strings.ToLower(mech)
			cl := testutil.Client(t, env.SSLAddr, kgo.DialTLSConfig(tlsCfg), kgo.SASL(franzSASL(t, mech)),
				kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
			roundTrip(t, cl, topic)
		})
	}
}
