package testutil

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/youmark/pkcs8"
	"software.sslmate.com/src/go-pkcs12"
)

// CA is a test certificate authority that issues server and client
// certificates and writes them in the key store formats Kafka reads.
type CA struct {
	t    testing.TB
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	dir  string
}

// Leaf is a certificate issued by a CA, with its key.
type Leaf struct {
	ca   *CA
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a CA whose files go to a temporary directory.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "Brook Test CA", Organization: []string{"Brook"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{t: t, Cert: cert, key: key, dir: t.TempDir()}
}

// Issue makes a certificate for subject, valid as a server for hosts
// (names or IP addresses) and as a client.
func (ca *CA) Issue(subject pkix.Name, hosts ...string) *Leaf {
	ca.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		ca.t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		ca.t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		ca.t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &Leaf{ca: ca, Cert: cert, Key: key}
}

// Server issues a certificate for localhost and 127.0.0.1.
func (ca *CA) Server(cn string) *Leaf {
	return ca.Issue(pkix.Name{CommonName: cn}, "localhost", "127.0.0.1")
}

// write stores data in a new file whose name ends with name, so that
// files written for different settings never overwrite each other.
func (ca *CA) write(name string, data []byte) string {
	ca.t.Helper()
	f, err := os.CreateTemp(ca.dir, "*-"+name)
	if err != nil {
		ca.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		ca.t.Fatal(err)
	}
	return f.Name()
}

// CertPEM is the CA certificate in PEM.
func (ca *CA) CertPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}))
}

// CertFile writes the CA certificate as a PEM file.
func (ca *CA) CertFile() string { return ca.write("ca.pem", []byte(ca.CertPEM())) }

// Pool is a pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// TrustStorePKCS12 writes a Java trust store in PKCS12 holding the CA.
func (ca *CA) TrustStorePKCS12(password string) string {
	ca.t.Helper()
	data, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
	if err != nil {
		ca.t.Fatal(err)
	}
	return ca.write("truststore.p12", data)
}

// TrustStoreJKS writes a JKS trust store holding the CA.
func (ca *CA) TrustStoreJKS(password string) string {
	ca.t.Helper()
	ks := keystore.New()
	err := ks.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{
		CreationTime: time.Now(),
		Certificate:  keystore.Certificate{Type: "X509", Content: ca.Cert.Raw},
	})
	if err != nil {
		ca.t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ks.Store(&buf, []byte(password)); err != nil {
		ca.t.Fatal(err)
	}
	return ca.write("truststore.jks", buf.Bytes())
}

func (l *Leaf) name() string { return l.Cert.SerialNumber.String() }

// CertPEM is the certificate chain (leaf, then CA) in PEM.
func (l *Leaf) CertPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: l.Cert.Raw})) + l.ca.CertPEM()
}

// KeyPEM is the private key as PKCS#8 PEM, encrypted when password is set.
func (l *Leaf) KeyPEM(password string) string {
	l.ca.t.Helper()
	if password == "" {
		der, err := x509.MarshalPKCS8PrivateKey(l.Key)
		if err != nil {
			l.ca.t.Fatal(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	}
	der, err := pkcs8.MarshalPrivateKey(l.Key, []byte(password), nil)
	if err != nil {
		l.ca.t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der}))
}

// CertFile and KeyFile write the chain and the unencrypted key as PEM
// files, for clients that take them (kcat, kafka-python).
func (l *Leaf) CertFile() string { return l.ca.write(l.name()+"-cert.pem", []byte(l.CertPEM())) }

// KeyFile writes the unencrypted PKCS#8 key.
func (l *Leaf) KeyFile() string { return l.ca.write(l.name()+"-key.pem", []byte(l.KeyPEM(""))) }

// PEMKeyStore writes key and chain in one PEM file (ssl.keystore.type=PEM).
func (l *Leaf) PEMKeyStore(keyPassword string) string {
	return l.ca.write(l.name()+"-keystore.pem", []byte(l.KeyPEM(keyPassword)+l.CertPEM()))
}

// KeyStorePKCS12 writes a PKCS12 key store.
func (l *Leaf) KeyStorePKCS12(password string) string {
	l.ca.t.Helper()
	data, err := pkcs12.Modern.Encode(l.Key, l.Cert, []*x509.Certificate{l.ca.Cert}, password)
	if err != nil {
		l.ca.t.Fatal(err)
	}
	return l.ca.write(l.name()+"-keystore.p12", data)
}

// KeyStoreJKS writes a JKS key store whose key has keyPassword.
func (l *Leaf) KeyStoreJKS(storePassword, keyPassword string) string {
	l.ca.t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		l.ca.t.Fatal(err)
	}
	ks := keystore.New()
	err = ks.SetPrivateKeyEntry("brook", keystore.PrivateKeyEntry{
		CreationTime: time.Now(),
		PrivateKey:   der,
		CertificateChain: []keystore.Certificate{
			{Type: "X509", Content: l.Cert.Raw}, {Type: "X509", Content: l.ca.Cert.Raw},
		},
	}, []byte(keyPassword))
	if err != nil {
		l.ca.t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := ks.Store(&buf, []byte(storePassword)); err != nil {
		l.ca.t.Fatal(err)
	}
	return l.ca.write(l.name()+"-keystore.jks", buf.Bytes())
}

// TLSCertificate is the certificate for a Go client or server.
func (l *Leaf) TLSCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{l.Cert.Raw, l.ca.Cert.Raw}, PrivateKey: l.Key, Leaf: l.Cert}
}
