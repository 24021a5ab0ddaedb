package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/internal/testutil"
)

// handshake runs a TLS handshake over a pipe and returns the server's
// principal for the client, or the first error.
func handshake(t *testing.T, srv *ServerTLS, cli *tls.Config) (Principal, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cerr := make(chan error, 1)
	go func() {
		c := tls.Client(b, cli)
		err := c.HandshakeContext(ctx)
		if err == nil {
			// TLS 1.3 reports a refused client certificate on the first
			// read, after the server's alert.
			c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if _, rerr := c.Read(make([]byte, 1)); rerr != nil && !isTimeout(rerr) {
				err = rerr
			}
		}
		b.Close()
		cerr <- err
	}()
	s := tls.Server(a, srv.Config)
	if err := s.HandshakeContext(ctx); err != nil {
		a.Close()
		<-cerr
		return Principal{}, err
	}
	if err := <-cerr; err != nil {
		return Principal{}, err
	}
	return srv.Principal(s.ConnectionState())
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestServerTLSKeyStoreTypes(t *testing.T) {
	ca := testutil.NewCA(t)
	srv := ca.Server("broker")
	client := ca.Issue(pkix.Name{CommonName: "alice", Organization: []string{"Brook"}})
	trust := config.TLS{TruststoreType: "PEM", TruststoreLocation: ca.CertFile()}
	for name, ks := range map[string]config.TLS{
		"PKCS12":          {KeystoreType: "PKCS12", KeystoreLocation: srv.KeyStorePKCS12("ks-pass"), KeystorePassword: "ks-pass"},
		"JKS":             {KeystoreType: "JKS", KeystoreLocation: srv.KeyStoreJKS("ks-pass", "key-pass"), KeystorePassword: "ks-pass", KeyPassword: "key-pass"},
		"JKS same pass":   {KeystoreType: "JKS", KeystoreLocation: srv.KeyStoreJKS("ks-pass", "ks-pass"), KeystorePassword: "ks-pass"},
		"PEM file":        {KeystoreType: "PEM", KeystoreLocation: srv.PEMKeyStore("")},
		"PEM file key pw": {KeystoreType: "PEM", KeystoreLocation: srv.PEMKeyStore("key-pass"), KeyPassword: "key-pass"},
		"PEM inline":      {KeystoreType: "PEM", KeystoreKey: srv.KeyPEM("key-pass"), KeyPassword: "key-pass", KeystoreCertificateChain: srv.CertPEM()},
	} {
		for tname, ts := range map[string]config.TLS{
			"PEM":        trust,
			"PEM inline": {TruststoreType: "PEM", TruststoreCertificates: ca.CertPEM()},
			"PKCS12":     {TruststoreType: "PKCS12", TruststoreLocation: ca.TrustStorePKCS12("ts-pass"), TruststorePassword: "ts-pass"},
			"JKS":        {TruststoreType: "JKS", TruststoreLocation: ca.TrustStoreJKS("ts-pass"), TruststorePassword: "ts-pass"},
		} {
			c := ks
			c.TruststoreType, c.TruststoreLocation, c.TruststorePassword, c.TruststoreCertificates =
				ts.TruststoreType, ts.TruststoreLocation, ts.TruststorePassword, ts.TruststoreCertificates
			c.ClientAuth = "required"
			s, err := NewServerTLS(c)
			if err != nil {
				t.Errorf("key store %s, trust store %s: %v", name, tname, err)
				continue
			}
			p, err := handshake(t, s, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{client.TLSCertificate()}})
			if want := "User:CN=alice,O=Brook"; err != nil || p.String() != want {
				t.Errorf("key store %s, trust store %s: principal %v, %v; want %s", name, tname, p, err, want)
			}
		}
	}
}

func TestServerTLSClientAuth(t *testing.T) {
	ca := testutil.NewCA(t)
	other := testutil.NewCA(t)
	srv := ca.Server("broker")
	good := ca.Issue(pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"ops"}})
	stranger := other.Issue(pkix.Name{CommonName: "mallory"})
	base := config.TLS{KeystoreType: "PEM", KeystoreLocation: srv.PEMKeyStore(""), TruststoreType: "PEM", TruststoreCertificates: ca.CertPEM(),
		PrincipalMappingRules: "RULE:^CN=(.*?),OU=ops$/$1/U,DEFAULT"}
	cli := func(l *testutil.Leaf) *tls.Config {
		c := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
		if l != nil {
			c.Certificates = []tls.Certificate{l.TLSCertificate()}
		}
		return c
	}
	for _, c := range []struct {
		auth   string
		client *testutil.Leaf
		want   string // "" means the handshake fails
	}{
		{"none", good, "User:ANONYMOUS"},
		{"none", nil, "User:ANONYMOUS"},
		{"requested", good, "User:ALICE"},
		{"requested", nil, "User:ANONYMOUS"},
		{"requested", stranger, ""},
		{"required", good, "User:ALICE"},
		{"required", nil, ""},
		{"required", stranger, ""},
	} {
		cfg := base
		cfg.ClientAuth = c.auth
		s, err := NewServerTLS(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p, err := handshake(t, s, cli(c.client))
		switch {
		case c.want == "" && err == nil:
			t.Errorf("ssl.client.auth=%s, client %v: handshake succeeded as %v", c.auth, c.client != nil, p)
		case c.want != "" && (err != nil || p.String() != c.want):
			t.Errorf("ssl.client.auth=%s, client %v: %v, %v; want %s", c.auth, c.client != nil, p, err, c.want)
		}
	}
}

func TestServerTLSProtocolsAndSuites(t *testing.T) {
	ca := testutil.NewCA(t)
	srv := ca.Server("broker")
	cfg := config.TLS{KeystoreType: "PEM", KeystoreLocation: srv.PEMKeyStore(""), EnabledProtocols: []string{"TLSv1.2"},
		CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}}
	s, err := NewServerTLS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, s, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS13}); err == nil {
		t.Error("a TLS 1.3-only client connected to a TLSv1.2 listener")
	}
	if _, err := handshake(t, s, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, MaxVersion: tls.VersionTLS12}); err == nil {
		t.Error("a client without the one allowed suite connected")
	}
	if _, err := handshake(t, s, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}); err != nil {
		t.Errorf("default client: %v", err)
	}
	for _, bad := range []config.TLS{
		{KeystoreType: "PEM", KeystoreLocation: cfg.KeystoreLocation, EnabledProtocols: []string{"SSLv3"}},
		{KeystoreType: "PEM", KeystoreLocation: cfg.KeystoreLocation, CipherSuites: []string{"TLS_NOPE"}},
		{KeystoreType: "PEM", KeystoreLocation: cfg.KeystoreLocation, ClientAuth: "maybe"},
		{KeystoreType: "PEM", KeystoreLocation: cfg.KeystoreLocation, PrincipalMappingRules: "RULE:x"},
		{KeystoreType: "PEM", KeystoreLocation: cfg.KeystoreLocation, KeystorePassword: "pw"},
		{KeystoreType: "PEM", KeystoreLocation: srv.PEMKeyStore("key-pass")},
		{KeystoreType: "PEM", KeystoreLocation: srv.PEMKeyStore("key-pass"), KeyPassword: "wrong"},
		{KeystoreType: "JKS", KeystoreKey: srv.KeyPEM(""), KeystoreCertificateChain: srv.CertPEM()},
		{KeystoreType: "PKCS12", KeystoreLocation: srv.KeyStorePKCS12("a"), KeystorePassword: "b"},
		{KeystoreType: "JKS", KeystoreLocation: srv.KeyStoreJKS("a", "a"), KeystorePassword: "b"},
		{KeystoreType: "BKS", KeystoreLocation: cfg.KeystoreLocation},
		{KeystoreType: "PEM", KeystoreLocation: cfg.KeystoreLocation, TruststoreType: "JKS", TruststoreLocation: ca.TrustStoreJKS("pw")},
		{KeystoreType: "PEM", KeystoreLocation: cfg.KeystoreLocation, TruststoreType: "PEM", TruststoreCertificates: ca.CertPEM(), TruststorePassword: "pw"},
		{KeystoreType: "PEM", KeystoreLocation: cfg.KeystoreLocation, TruststoreType: "PKCS12", TruststoreLocation: ca.TrustStorePKCS12("a"), TruststorePassword: "b"},
		{},
	} {
		if _, err := NewServerTLS(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

func TestClientTLSEndpointIdentification(t *testing.T) {
	ca := testutil.NewCA(t)
	// A certificate for another host name than the one dialed.
	srv := ca.Issue(pkix.Name{CommonName: "elsewhere"}, "elsewhere.example")
	s, err := NewServerTLS(config.TLS{KeystoreType: "PEM", KeystoreLocation: srv.PEMKeyStore("")})
	if err != nil {
		t.Fatal(err)
	}
	trust := config.TLS{TruststoreType: "PEM", TruststoreCertificates: ca.CertPEM()}
	for _, c := range []struct {
		algo, host string
		ok         bool
	}{
		{"https", "localhost", false},
		{"https", "elsewhere.example", true},
		{"", "localhost", true},
	} {
		cfg := trust
		cfg.EndpointIdentification = c.algo
		ct, err := NewClientTLS(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = handshake(t, s, ct.Config(c.host))
		if (err == nil) != c.ok {
			t.Errorf("algorithm %q, host %s: err %v, want ok=%v", c.algo, c.host, err, c.ok)
		}
	}
	// Without host checks the chain is still checked.
	ct, err := NewClientTLS(config.TLS{TruststoreType: "PEM", TruststoreCertificates: testutil.NewCA(t).CertPEM()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, s, ct.Config("localhost")); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted server accepted without host checks: %v", err)
	}
}
