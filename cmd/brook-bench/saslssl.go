package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"software.sslmate.com/src/go-pkcs12"
)

// --security sasl_ssl: each server gets a second listener, SASL_SSL with
// SCRAM-SHA-512, whose key store (PKCS12, one CA and server certificate
// made here) is the same file for Brook and Kafka. The PLAINTEXT listener
// stays for the readiness probe and for creating the SCRAM user; the
// workload's clients use only the SASL_SSL one.
const (
	securityPlaintext = "plaintext"
	securitySASLSSL   = "sasl_ssl"

	benchUser, benchPassword = "bench", "bench-secret"
	benchStorePassword       = "bench-store"
)

// benchTLS is the CA and key store of a --security sasl_ssl run.
type benchTLS struct {
	pool     *x509.CertPool
	keyStore string // PKCS12, benchStorePassword
}

// newBenchTLS writes a CA-signed server certificate for 127.0.0.1 as a
// PKCS12 key store in dir.
func newBenchTLS(dir string) (*benchTLS, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "brook-bench CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("bench CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "brook-bench server"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("bench server certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p12, err := pkcs12.Modern.Encode(key, leaf, []*x509.Certificate{ca}, benchStorePassword)
	if err != nil {
		return nil, fmt.Errorf("bench key store: %w", err)
	}
	path := filepath.Join(dir, "keystore.p12")
	if err := os.WriteFile(path, p12, 0o600); err != nil {
		return nil, fmt.Errorf("bench key store: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &benchTLS{pool: pool, keyStore: path}, nil
}

// serverProps are the SASL_SSL listener's settings, the same for both
// servers (Brook takes them as --override, Kafka in its properties).
func (b *benchTLS) serverProps() []string {
	return []string{
		"sasl.enabled.mechanisms=SCRAM-SHA-512",
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"ssl.keystore.type=PKCS12",
		"ssl.keystore.location=" + b.keyStore,
		"ssl.keystore.password=" + benchStorePassword,
	}
}

// clientOpts are the workload clients' TLS and SCRAM settings.
func (b *benchTLS) clientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.DialTLSConfig(&tls.Config{RootCAs: b.pool, MinVersion: tls.VersionTLS12}),
		kgo.SASL(scram.Auth{User: benchUser, Pass: benchPassword}.AsSha512Mechanism()),
	}
}

// secure adds the SASL_SSL listener on saslPort to spec: Brook's listeners
// override, or kafka-server.sh's --sasl-ssl-port and --config file.
func (b *benchTLS) secure(spec *serverSpec, dir, plainAddr string, saslPort int) error {
	saslAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(saslPort))
	switch spec.name {
	case "brook":
		for i, a := range spec.argv {
			if strings.HasPrefix(a, "listeners=") {
				spec.argv[i] = "listeners=PLAINTEXT://" + plainAddr + ",SASL_SSL://" + saslAddr
			}
		}
		for _, p := range b.serverProps() {
			spec.argv = append(spec.argv, "--override", p)
		}
	case "kafka":
		path := filepath.Join(dir, "sasl-ssl.properties")
		if err := os.WriteFile(path, []byte(strings.Join(b.serverProps(), "\n")+"\n"), 0o600); err != nil {
			return fmt.Errorf("kafka SASL_SSL config: %w", err)
		}
		extra := []string{"--sasl-ssl-port", strconv.Itoa(saslPort), "--config", path}
		spec.prepare = append(spec.prepare, extra...)
		spec.argv = append(spec.argv, extra...)
	default:
		return fmt.Errorf("no SASL_SSL set-up for %s", spec.name)
	}
	return nil
}

// createBenchUser gives benchUser its SCRAM-SHA-512 credential through the
// PLAINTEXT listener, then waits until a SASL_SSL client authenticates
// (Kafka applies the credential asynchronously).
func (b *benchTLS) createBenchUser(ctx context.Context, plainAddr, saslAddr string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(plainAddr))
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: benchUser, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: benchPassword}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("create SCRAM user %s: %w", benchUser, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := b.ping(ctx, saslAddr)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("SASL_SSL login as %s: %w", benchUser, err)
		}
		if err := pause(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

func (b *benchTLS) ping(ctx context.Context, addr string) error {
	cl, err := kgo.NewClient(append(b.clientOpts(), kgo.SeedBrokers(addr))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return cl.Ping(pctx)
}
