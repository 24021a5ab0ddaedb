package harness

import (
	"crypto/x509/pkix"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
)

// TLSEnv is a broker with a PLAINTEXT listener (for the harness's own
// readiness checks and set-up) and an SSL listener that requires client
// certificates, with the files clients need to reach it.
type TLSEnv struct {
	*Env
	// SSLAddr is the SSL listener's address.
	SSLAddr string
	CA      *testutil.CA
	// Client is the client certificate, CN=compat-client,O=Brook.
	Client *testutil.Leaf
	// CAFile, ClientCertFile and ClientKeyFile are PEM files (the key
	// PKCS#8, unencrypted), for librdkafka and Python's ssl.
	CAFile, ClientCertFile, ClientKeyFile string
	// ClientKeyStore (PKCS12) and TrustStore (JKS, made by Java's
	// keytool) are for Java clients; both use StorePassword.
	ClientKeyStore, TrustStore string
}

// StorePassword is the password of every key and trust store TLSEnv makes.
const StorePassword = "compat-secret"

// ClientPrincipal is the principal the broker derives from the client
// certificate of a TLSEnv, Kafka's default (the RFC 2253 name).
const ClientPrincipal = "User:CN=compat-client,O=Brook"

// StartTLS starts a broker whose SSL listener uses a JKS key store made by
// keytool (from a PKCS12 one made in Go) and a PEM trust store, with
// ssl.client.auth=required.
func StartTLS(t *testing.T, bin string, overrides map[string]string) *TLSEnv {
	t.Helper()
	return startTLS(t, bin, "SSL", map[string]string{"ssl.client.auth": "required"}, overrides)
}

// startTLS starts a broker with a PLAINTEXT listener and one of protocol
// (SSL or SASL_SSL) whose key and trust stores are StartTLS's, plus props
// then overrides.
func startTLS(t *testing.T, bin, protocol string, props, overrides map[string]string) *TLSEnv {
	t.Helper()
	ca := testutil.NewCA(t)
	server := ca.Server("brook")
	client := ca.Issue(pkix.Name{CommonName: "compat-client", Organization: []string{"Brook"}})
	dir := t.TempDir()
	brokerJKS := filepath.Join(dir, "broker.jks")
	keytool(t, "-importkeystore", "-noprompt",
		"-srckeystore", server.KeyStorePKCS12(StorePassword), "-srcstoretype", "PKCS12", "-srcstorepass", StorePassword,
		"-destkeystore", brokerJKS, "-deststoretype", "JKS", "-deststorepass", StorePassword, "-destkeypass", StorePassword)
	trustJKS := filepath.Join(dir, "truststore.jks")
	keytool(t, "-importcert", "-noprompt", "-alias", "ca", "-file", ca.CertFile(),
		"-keystore", trustJKS, "-storetype", "JKS", "-storepass", StorePassword)

	plain, tlsPort := testutil.FreePort(t), testutil.FreePort(t)
	all := map[string]string{
		"listeners":               fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,%s://127.0.0.1:%d", plain, protocol, tlsPort),
		"advertised.listeners":    fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,%s://localhost:%d", plain, protocol, tlsPort),
		"ssl.keystore.type":       "JKS",
		"ssl.keystore.location":   brokerJKS,
		"ssl.keystore.password":   StorePassword,
		"ssl.key.password":        StorePassword,
		"ssl.truststore.type":     "PEM",
		"ssl.truststore.location": ca.CertFile(),
	}
	maps.Copy(all, props)
	maps.Copy(all, overrides)
	return &TLSEnv{
		Env:            Start(t, bin, all),
		SSLAddr:        fmt.Sprintf("localhost:%d", tlsPort),
		CA:             ca,
		Client:         client,
		CAFile:         ca.CertFile(),
		ClientCertFile: client.CertFile(),
		ClientKeyFile:  client.KeyFile(),
		ClientKeyStore: client.KeyStorePKCS12(StorePassword),
		TrustStore:     trustJKS,
	}
}

func keytool(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("keytool", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("keytool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// JavaClientConfig writes the properties of a Java client (the tools'
// --command-config, --producer.config, --consumer.config) for the SSL
// listener, and returns its path.
func (e *TLSEnv) JavaClientConfig() string {
	e.T.Helper()
	p := filepath.Join(e.T.TempDir(), "client-ssl.properties")
	props := strings.Join([]string{
		"security.protocol=SSL",
		"ssl.keystore.type=PKCS12",
		"ssl.keystore.location=" + e.ClientKeyStore,
		"ssl.keystore.password=" + StorePassword,
		"ssl.key.password=" + StorePassword,
	}, "\n") + "\n" + e.javaTrustProperties()
	if err := os.WriteFile(p, []byte(props), 0o600); err != nil {
		e.T.Fatal(err)
	}
	return p
}

// javaTrustProperties are a Java client's settings for trusting the
// broker's certificate: the JKS trust store.
func (e *TLSEnv) javaTrustProperties() string {
	return "ssl.truststore.type=JKS\nssl.truststore.location=" + e.TrustStore + "\nssl.truststore.password=" + StorePassword + "\n"
}

// KcatArgs are kcat's options for the SSL listener with the client
// certificate.
func (e *TLSEnv) KcatArgs() []string {
	return []string{"-b", e.SSLAddr, "-X", "security.protocol=ssl", "-X", "ssl.ca.location=" + e.CAFile,
		"-X", "ssl.certificate.location=" + e.ClientCertFile, "-X", "ssl.key.location=" + e.ClientKeyFile}
}
