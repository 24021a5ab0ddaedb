package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SASLSSLEnv is a broker with a PLAINTEXT listener (Addr, for setup) and a
// SASL_SSL one (SSLAddr, advertised as localhost so that clients check the
// host name) enabling every mechanism. TLS there is server-only
// (ssl.client.auth=none, Kafka's default): SASL authenticates the client.
// The key and trust stores are StartTLS's.
type SASLSSLEnv struct {
	*TLSEnv
}

// StartSASLSSL starts a SASLSSLEnv and creates the SCRAM user for both
// SCRAM mechanisms.
func StartSASLSSL(t *testing.T, bin string, overrides map[string]string) *SASLSSLEnv {
	t.Helper()
	env := &SASLSSLEnv{TLSEnv: startTLS(t, bin, "SASL_SSL", saslProps("sasl_ssl"), overrides)}
	CreateScramUsers(t, env.Addr())
	return env
}

// SASLSSLMechanisms are the mechanisms the SASL_SSL scenarios run:
// SCRAM-SHA-512 in make test (each mechanism's SASL exchange is the same
// over TLS as over SASL_PLAINTEXT, which tests them all), every one with
// SASLFull.
func SASLSSLMechanisms() []string {
	if SASLFull() {
		return SASLMechanisms
	}
	return []string{"SCRAM-SHA-512"}
}

// JavaClientConfig writes a Java client's settings for mechanism over
// SASL_SSL (trusting the CA through the JKS trust store) and returns the
// file's path.
func (e *SASLSSLEnv) JavaClientConfig(mechanism string) string {
	e.T.Helper()
	p := filepath.Join(e.T.TempDir(), "sasl-ssl-"+strings.ToLower(mechanism)+".properties")
	props := "security.protocol=SASL_SSL\n" + e.javaTrustProperties() + javaSASLProperties(mechanism)
	if err := os.WriteFile(p, []byte(props), 0o600); err != nil {
		e.T.Fatal(err)
	}
	return p
}
