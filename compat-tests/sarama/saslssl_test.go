package sarama_test

import (
	"crypto/tls"
	"fmt"
	"os"
	"testing"

	"github.com/IBM/sarama"
)

// TestSaramaSASLSSL is TestSaramaSASL over SASL_SSL (server-only TLS, the
// broker's certificate checked against the CA, then SASL): SCRAM-SHA-512,
// every mechanism with BROOK_SASL_FULL=1 (make compat-sasl).
func TestSaramaSASLSSL(t *testing.T) {
	pki := newPKI(t)
	ks, ts := pki.brokerStores(t)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	saslAddr := fmt.Sprintf("127.0.0.1:%d", port)
	b := startBrookWith(t, func(addr string) []string {
		return []string{
			"listeners=PLAINTEXT://" + addr + ",SASL_SSL://" + saslAddr,
			"ssl.keystore.type=PEM", "ssl.keystore.location=" + ks,
			"ssl.truststore.type=PEM", "ssl.truststore.location=" + ts,
			"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
			"listener.name.sasl_ssl.plain.sasl.jaas.config=" + plainJAAS,
		}
	})
	version := sarama.V2_8_0_0
	upsertScramUser(t, newAdmin(t, b.addr, version))
	for _, c := range saramaSASLCases {
		if c.name != "SCRAM-SHA-512" && os.Getenv("BROOK_SASL_FULL") != "1" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			cfg := newConfig(t, version)
			cfg.Net.TLS.Enable = true
			cfg.Net.TLS.Config = &tls.Config{RootCAs: pki.pool}
			saslRoundTrip(t, b, saslAddr, cfg, c)
		})
	}
}
