package broker

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// principals records the principal of each request of one API.
type principals struct {
	mu   sync.Mutex
	seen []string
}

func (p *principals) hook(key int16) func(*Broker) {
	return func(b *Broker) {
		h := b.handlers[key]
		next := h.fn
		h.fn = func(ctx context.Context, r *request, req kmsg.Request) (reply, error) {
			p.mu.Lock()
			p.seen = append(p.seen, r.principal.String())
			p.mu.Unlock()
			return next(ctx, r, req)
		}
		b.handlers[key] = h
	}
}

func (p *principals) last() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.seen) == 0 {
		return ""
	}
	return p.seen[len(p.seen)-1]
}

// sslBroker starts a broker whose only listener is SSL, with a PKCS12 key
// store and a PEM trust store, under overrides.
func sslBroker(t *testing.T, ca *testutil.CA, overrides map[string]string, setup func(*Broker)) *testBroker {
	t.Helper()
	srv := ca.Server("broker")
	props := map[string]string{
		"listeners":                      "SSL://127.0.0.1:0",
		"security.inter.broker.protocol": "SSL",
		"ssl.keystore.type":              "PKCS12",
		"ssl.keystore.location":          srv.KeyStorePKCS12("ks-secret"),
		"ssl.keystore.password":          "ks-secret",
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.location":        ca.CertFile(),
	}
	for k, v := range overrides {
		props[k] = v
	}
	return startBrokerWith(t, props, setup)
}

func tlsClientConfig(ca *testutil.CA, leaf *testutil.Leaf) *tls.Config {
	c := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
	if leaf != nil {
		c.Certificates = []tls.Certificate{leaf.TLSCertificate()}
	}
	return c
}

func TestSSLListenerMutualTLS(t *testing.T) {
	ca := testutil.NewCA(t)
	var seen principals
	var logs testutil.SyncBuffer
	tb := sslBroker(t, ca, map[string]string{
		"ssl.client.auth":             "required",
		"ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=apps,.*$/$1/L,DEFAULT",
	}, func(b *Broker) {
		seen.hook(kmsg.Metadata.Int16())(b)
		b.logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	alice := ca.Issue(pkix.Name{CommonName: "Alice", OrganizationalUnit: []string{"apps"}, Organization: []string{"Brook"}})
	cl := tb.client(kgo.DialTLSConfig(tlsClientConfig(ca, alice)), kgo.DefaultProduceTopic("tls"), kgo.ConsumeTopics("tls"))
	ctx := testContext(t)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "tls"); err != nil {
		t.Fatalf("create topic over TLS: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("secret")}).FirstErr(); err != nil {
		t.Fatalf("produce over TLS: %v", err)
	}
	fs := cl.PollFetches(ctx)
	if err := fs.Err(); err != nil {
		t.Fatalf("fetch over TLS: %v", err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "secret" {
		t.Fatalf("fetched %v", recs)
	}
	if got := seen.last(); got != "User:alice" {
		t.Errorf("principal %q, want User:alice", got)
	}
	// Kafka's request log names the principal.
	logged := false
	for _, line := range strings.Split(logs.String(), "\n") {
		logged = logged || strings.Contains(line, "msg=request") && strings.Contains(line, "api=Produce") && strings.Contains(line, "principal=User:alice")
	}
	if !logged {
		t.Errorf("the request log does not name the principal of the Produce:\n%s", logs.String())
	}

	// Without the OU the DEFAULT rule gives the whole name, in Java's
	// RFC 2253 form.
	bob := ca.Issue(pkix.Name{CommonName: "bob", Organization: []string{"Brook"}, Country: []string{"FR"}})
	cl2 := tb.client(kgo.DialTLSConfig(tlsClientConfig(ca, bob)))
	if _, err := kadm.NewClient(cl2).ListTopics(ctx); err != nil {
		t.Fatalf("metadata as bob: %v", err)
	}
	if got := seen.last(); got != "User:CN=bob,O=Brook,C=FR" {
		t.Errorf("principal %q, want User:CN=bob,O=Brook,C=FR", got)
	}

	// ssl.client.auth=required: no certificate, no connection.
	cl3 := tb.client(kgo.DialTLSConfig(tlsClientConfig(ca, nil)), kgo.RequestRetries(0))
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cl3.Ping(short); err == nil {
		t.Error("a client without a certificate was served under ssl.client.auth=required")
	}
}

func TestSSLListenerAnonymousWithoutClientAuth(t *testing.T) {
	ca := testutil.NewCA(t)
	var seen principals
	tb := sslBroker(t, ca, nil, seen.hook(kmsg.Metadata.Int16()))
	// A certificate the broker did not ask for is not used.
	cl := tb.client(kgo.DialTLSConfig(tlsClientConfig(ca, ca.Issue(pkix.Name{CommonName: "alice"}))))
	if _, err := kadm.NewClient(cl).ListTopics(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if got := seen.last(); got != "User:ANONYMOUS" {
		t.Errorf("principal %q, want User:ANONYMOUS", got)
	}
}

// A listener-prefixed setting applies to its listener alone.
func TestSSLListenerOverrides(t *testing.T) {
	ca := testutil.NewCA(t)
	tb := sslBroker(t, ca, map[string]string{
		"listeners":                            "SSL://127.0.0.1:0,STRICT://127.0.0.1:0",
		"listener.security.protocol.map":       "SSL:SSL,STRICT:SSL",
		"listener.name.strict.ssl.client.auth": "required",
	}, nil)
	addrs := tb.b.Addrs()
	ctx := testContext(t)
	for i, c := range []struct {
		name string
		ok   bool
	}{{"SSL", true}, {"STRICT", false}} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs[i].String()), kgo.DialTLSConfig(tlsClientConfig(ca, nil)), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = cl.Ping(short)
		cancel()
		cl.Close()
		if (err == nil) != c.ok {
			t.Errorf("listener %s without a client certificate: %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// readsClosed reports whether the broker closed c (without a response)
// before the deadline.
func readsClosed(t *testing.T, c net.Conn) error {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 1024)
	for {
		n, err := c.Read(buf)
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			return errors.New("the broker kept the connection open")
		case err != nil:
			return nil
		case n > 0 && buf[0] != 0x15:
			// A TLS alert (0x15) before closing is fine; anything else
			// is an answer.
			return errors.New("the broker answered")
		}
	}
}

func TestSSLListenerWrongProtocolClients(t *testing.T) {
	ca := testutil.NewCA(t)
	tb := sslBroker(t, ca, map[string]string{
		"listeners":                      "SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
		"security.inter.broker.protocol": "PLAINTEXT",
	}, nil)
	sslAddr, plainAddr := tb.b.Addrs()[0].String(), tb.b.Addrs()[1].String()

	// A silent client holds its own slot only: others are served.
	silent, err := net.Dial("tcp", sslAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	// A plaintext Kafka request on the TLS port.
	plain, err := net.Dial("tcp", sslAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "x", "1"
	if _, err := plain.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	if err := readsClosed(t, plain); err != nil {
		t.Errorf("plaintext client on the SSL port: %v", err)
	}

	// A TLS client on the plaintext port.
	raw, err := net.Dial("tcp", plainAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tc := tls.Client(raw, tlsClientConfig(ca, nil))
	tc.SetDeadline(time.Now().Add(30 * time.Second))
	if err := tc.Handshake(); err == nil {
		t.Error("TLS handshake succeeded on the plaintext port")
	}

	// Both listeners still serve, the silent client notwithstanding.
	ctx := testContext(t)
	for _, opts := range [][]kgo.Opt{
		{kgo.SeedBrokers(sslAddr), kgo.DialTLSConfig(tlsClientConfig(ca, nil))},
		{kgo.SeedBrokers(plainAddr)},
	} {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Ping(ctx); err != nil {
			t.Errorf("after the bad clients: %v", err)
		}
		cl.Close()
	}
}

// clientHello captures the first flight of a Go TLS client.
func clientHello(t testing.TB) []byte {
	a, b := net.Pipe()
	go func() {
		tls.Client(a, &tls.Config{ServerName: "localhost"}).Handshake()
		a.Close()
	}()
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, _ := io.ReadAtLeast(b, buf, 5)
	b.Close()
	return buf[:n]
}

// FuzzTLSClientHello sends raw bytes to an SSL listener: whatever they
// are, the broker closes the connection (it never hangs on it) and goes
// on serving.
func FuzzTLSClientHello(f *testing.F) {
	hello := clientHello(f)
	f.Add(hello)
	f.Add(hello[:5])
	f.Add(hello[:len(hello)/2])
	f.Add([]byte{0, 0, 0, 10, 0, 18, 0, 3, 0, 0, 0, 1, 0, 0})
	f.Add([]byte{0x16, 0x03, 0x01, 0xff, 0xff})
	ca := testutil.NewCA(f)
	srv := ca.Server("broker")
	tb := startBroker(f, map[string]string{
		"listeners":                      "SSL://127.0.0.1:0",
		"security.inter.broker.protocol": "SSL",
		"ssl.keystore.type":              "PEM",
		"ssl.keystore.location":          srv.PEMKeyStore(""),
		"ssl.truststore.type":            "PEM",
		"ssl.truststore.certificates":    ca.CertPEM(),
		"ssl.client.auth":                "requested",
	})
	addr := tb.addr
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(data)
		c.(*net.TCPConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Fatalf("the broker did not close the connection: %v", err)
		}
		tc, err := tls.Dial("tcp", addr, tlsClientConfig(ca, nil))
		if err != nil {
			t.Fatalf("the broker stopped serving TLS: %v", err)
		}
		tc.Close()
	})
}
