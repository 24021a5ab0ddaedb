package sarama_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// testPKI is a CA with one server and one client certificate, made with
// crypto/x509 (this module cannot import Brook's internal/testutil).
type testPKI struct {
	caPEM                 []byte
	pool                  *x509.CertPool
	serverPEM, clientCert tls.Certificate
	serverKeyStore        []byte // key then chain, PEM: ssl.keystore.type=PEM
}

func newPKI(t *testing.T) *testPKI {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sarama test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string) (tls.Certificate, []byte) {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		p8, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		store := append(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}),
			pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}, store
	}
	p := &testPKI{caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.serverPEM, p.serverKeyStore = issue(2, "brook")
	p.clientCert, _ = issue(3, "sarama-client")
	return p
}

// brokerStores writes the broker's PEM key store and trust store (the
// CA) and returns their paths.
func (p *testPKI) brokerStores(t *testing.T) (keyStore, trustStore string) {
	t.Helper()
	dir := t.TempDir()
	keyStore, trustStore = filepath.Join(dir, "broker.pem"), filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(keyStore, p.serverKeyStore, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trustStore, p.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return keyStore, trustStore
}

// TestSaramaSSL: sarama with a client certificate on an SSL listener that
// requires one (the broker's key store is PEM): ClusterAdmin create and
// list, SyncProducer acks=WaitForAll, a partition consumer.
func TestSaramaSSL(t *testing.T) {
	pki := newPKI(t)
	ks, ts := pki.brokerStores(t)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	sslAddr := fmt.Sprintf("127.0.0.1:%d", port)
	startBrookWith(t, func(addr string) []string {
		return []string{
			"listeners=PLAINTEXT://" + addr + ",SSL://" + sslAddr,
			"ssl.keystore.type=PEM", "ssl.keystore.location=" + ks,
			"ssl.truststore.type=PEM", "ssl.truststore.location=" + ts,
			"ssl.client.auth=required",
		}
	})

	cfg := newConfig(t, sarama.NewConfig().Version)
	cfg.Net.TLS.Enable = true
	cfg.Net.TLS.Config = &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.clientCert}}
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	const topic = "sarama-ssl"

	admin, err := sarama.NewClusterAdmin([]string{sslAddr}, cfg)
	if err != nil {
		t.Fatalf("ClusterAdmin over SSL: %v", err)
	}
	defer admin.Close()
	if err := admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("CreateTopic over SSL: %v", err)
	}
	eventually(t, 30*time.Second, func() error {
		topics, err := admin.ListTopics()
		if err != nil {
			return err
		}
		if _, ok := topics[topic]; !ok {
			return fmt.Errorf("ListTopics lacks %s", topic)
		}
		return nil
	})

	prod, err := sarama.NewSyncProducer([]string{sslAddr}, cfg)
	if err != nil {
		t.Fatalf("SyncProducer over SSL: %v", err)
	}
	defer prod.Close()
	for i := range 3 {
		_, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint("k", i)), Value: sarama.StringEncoder(fmt.Sprint("v", i))})
		if err != nil || off != int64(i) {
			t.Fatalf("produce %d over SSL: offset %d, %v", i, off, err)
		}
	}

	cons, err := sarama.NewConsumer([]string{sslAddr}, cfg)
	if err != nil {
		t.Fatalf("Consumer over SSL: %v", err)
	}
	defer cons.Close()
	pc, err := cons.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	for i := range 3 {
		select {
		case m := <-pc.Messages():
			if string(m.Key) != fmt.Sprint("k", i) || string(m.Value) != fmt.Sprint("v", i) || m.Offset != int64(i) {
				t.Errorf("message %d: %s=%s at %d", i, m.Key, m.Value, m.Offset)
			}
		case err := <-pc.Errors():
			t.Fatalf("consume over SSL: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatalf("message %d not consumed over SSL within 30s", i)
		}
	}

	// Without a client certificate sarama cannot connect.
	bare := newConfig(t, sarama.NewConfig().Version)
	bare.Net.TLS.Enable = true
	bare.Net.TLS.Config = &tls.Config{RootCAs: pki.pool}
	bare.Metadata.Retry.Max = 0
	if c, err := sarama.NewClient([]string{sslAddr}, bare); err == nil {
		c.Close()
		t.Error("sarama without a client certificate connected under ssl.client.auth=required")
	}
}
