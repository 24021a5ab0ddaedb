package broker

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/internal/testutil"
)

const testPlainJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// saslProps is a broker with a PLAINTEXT listener (first, for tests'
// admin calls) and a SASL_PLAINTEXT one enabling every mechanism.
func saslProps(extra map[string]string) map[string]string {
	m := map[string]string{
		"listeners":               "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": testPlainJAAS,
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func (tb *testBroker) saslAddr() string { return tb.b.Addrs()[1].String() }

func unsecuredJWS(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

// TestSASLMechanisms produces, consumes and makes an admin call with
// franz-go over SASL_PLAINTEXT with each mechanism, SCRAM users created
// with AlterUserScramCredentials, and checks the principal each request
// runs as.
func TestSASLMechanisms(t *testing.T) {
	var mu sync.Mutex
	principals := map[string]bool{}
	tb := startBrokerWith(t, saslProps(nil), func(b *Broker) {
		h := b.handlers[3]
		next := h.fn
		h.fn = func(ctx context.Context, r *request, req kmsg.Request) (reply, error) {
			mu.Lock()
			principals[r.principal.String()] = true
			mu.Unlock()
			return next(ctx, r, req)
		}
		b.handlers[3] = h
	})
	ctx := testContext(t)
	adm := tb.admin()
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
		{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "carol-secret"},
	})
	if err != nil || altered.Error() != nil {
		t.Fatalf("alter SCRAM: %v %v", err, altered.Error())
	}
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil || described.Error() != nil || len(described) != 2 || described["carol"].CredInfos[0].Iterations != 8192 {
		t.Fatalf("describe SCRAM: %v %+v", err, described)
	}
	// An empty user list describes every user too, as Kafka's
	// kafka-configs --describe --entity-type users sends it.
	empty := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	empty.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{}
	if resp := tb.roundTrip(empty).(*kmsg.DescribeUserSCRAMCredentialsResponse); len(resp.Results) != 2 {
		t.Fatalf("describe with an empty user list: %+v", resp.Results)
	}
	tb.createTopic("sasl", 1, nil)
	token := unsecuredJWS(`{"sub":"dave","exp":` + strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10) + `}`)
	for _, c := range []struct {
		mech sasl.Mechanism
		user string
	}{
		{plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), "alice"},
		{scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism(), "bob"},
		{scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha512Mechanism(), "carol"},
		{oauth.Auth{Token: token}.AsMechanism(), "dave"},
	} {
		t.Run(c.mech.Name(), func(t *testing.T) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(tb.saslAddr()), kgo.SASL(c.mech), kgo.ConsumeTopics("sasl"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sasl", Value: []byte(c.user)}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			if _, err := kadm.NewClient(cl).ListTopics(ctx); err != nil {
				t.Fatalf("admin: %v", err)
			}
			found := false
			for !found {
				fs := cl.PollFetches(ctx)
				if err := fs.Err0(); err != nil {
					t.Fatalf("consume: %v", err)
				}
				fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == c.user })
			}
			mu.Lock()
			defer mu.Unlock()
			if !principals["User:"+c.user] {
				t.Errorf("no request ran as User:%s: %v", c.user, principals)
			}
		})
	}
}

// saslProbe is a probe on the SASL listener.
func saslProbe(t *testing.T, tb *testBroker) *probeConn { return dialProbe(t, tb.saslAddr()) }

func handshake(version int16, mech string) *kmsg.SASLHandshakeRequest {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.SetVersion(version)
	req.Mechanism = mech
	return req
}

func authenticate(version int16, token []byte) *kmsg.SASLAuthenticateRequest {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.SetVersion(version)
	req.SASLAuthBytes = token
	return req
}

func metadataRequest() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	return req
}

// TestSASLFailures checks Kafka's refusals: a wrong password gets
// SASL_AUTHENTICATION_FAILED and the connection closes; a mechanism not
// enabled gets UNSUPPORTED_SASL_MECHANISM with the enabled list and the
// connection closes; requests other than ApiVersions and SASL ones before
// authentication close the connection unanswered.
func TestSASLFailures(t *testing.T) {
	tb := startBroker(t, saslProps(map[string]string{"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256"}))
	ctx := testContext(t)

	t.Run("wrong password with kgo", func(t *testing.T) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(tb.saslAddr()), kgo.SASL(plain.Auth{User: "alice", Pass: "nope"}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		err = cl.Ping(ctx)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("ping: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
	t.Run("wrong password closes", func(t *testing.T) {
		p := saslProbe(t, tb)
		p.roundTrip(handshake(1, "PLAIN"))
		resp := p.roundTrip(authenticate(2, []byte("\x00alice\x00nope"))).(*kmsg.SASLAuthenticateResponse)
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "Authentication failed: Invalid username or password" {
			t.Fatalf("answer %d %v", resp.ErrorCode, resp.ErrorMessage)
		}
		if err := p.closedByBroker(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("unknown SCRAM user gets the generic message", func(t *testing.T) {
		p := saslProbe(t, tb)
		p.roundTrip(handshake(1, "SCRAM-SHA-256"))
		resp := p.roundTrip(authenticate(1, []byte("n,,n=nobody,r=abcdef"))).(*kmsg.SASLAuthenticateResponse)
		want := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
		if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != want {
			t.Fatalf("answer %d %v", resp.ErrorCode, resp.ErrorMessage)
		}
		if err := p.closedByBroker(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("mechanism not enabled", func(t *testing.T) {
		p := saslProbe(t, tb)
		resp := p.roundTrip(handshake(1, "SCRAM-SHA-512")).(*kmsg.SASLHandshakeResponse)
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || strings.Join(resp.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256" {
			t.Fatalf("answer %d %v", resp.ErrorCode, resp.SupportedMechanisms)
		}
		if err := p.closedByBroker(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	})
	for name, steps := range map[string][]kmsg.Request{
		"metadata first":           {metadataRequest()},
		"metadata after versions":  {apiVersionsRequest(), metadataRequest()},
		"versions twice":           {apiVersionsRequest(), apiVersionsRequest()},
		"metadata after handshake": {handshake(1, "PLAIN"), metadataRequest()},
		"authenticate first":       {authenticate(1, []byte("\x00alice\x00alice-secret"))},
		"handshake twice":          {handshake(1, "PLAIN"), handshake(1, "PLAIN")},
	} {
		t.Run(name, func(t *testing.T) {
			p := saslProbe(t, tb)
			for _, req := range steps[:len(steps)-1] {
				p.roundTrip(req)
			}
			p.send(steps[len(steps)-1])
			if err := p.closedByBroker(10 * time.Second); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("plaintext listener refuses SASL", func(t *testing.T) {
		resp := tb.roundTrip(handshake(1, "PLAIN")).(*kmsg.SASLHandshakeResponse)
		if resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("handshake on PLAINTEXT: %d", resp.ErrorCode)
		}
	})
	t.Run("authenticated connection refuses a second SaslAuthenticate", func(t *testing.T) {
		p := saslProbe(t, tb)
		p.roundTrip(handshake(1, "PLAIN"))
		if resp := p.roundTrip(authenticate(0, []byte("\x00alice\x00alice-secret"))).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != 0 {
			t.Fatalf("authenticate: %d", resp.ErrorCode)
		}
		if resp := p.roundTrip(authenticate(0, []byte("x"))).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("second authenticate: %d", resp.ErrorCode)
		}
		// A v0 client cannot re-authenticate: its handshake is refused too.
		if resp := p.roundTrip(handshake(1, "PLAIN")).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("handshake after authentication: %d", resp.ErrorCode)
		}
		p.roundTrip(metadataRequest())
	})
}

// rawToken sends a SASL token as SaslHandshake v0 clients do: size
// prefixed, no header; and reads the raw answer.
func (r *probeConn) rawToken(token []byte) ([]byte, error) {
	r.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := r.c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(token)))); err != nil {
		return nil, err
	}
	if _, err := r.c.Write(token); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(r.c, size[:]); err != nil {
		return nil, err
	}
	out := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err := io.ReadFull(r.c, out)
	return out, err
}

// TestSASLHandshakeV0 authenticates as clients before KIP-152 do: after
// SaslHandshake v0 the tokens go raw, and then Kafka requests are served.
func TestSASLHandshakeV0(t *testing.T) {
	tb := startBroker(t, saslProps(nil))
	ctx := testContext(t)
	if _, err := tb.admin().AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"}}); err != nil {
		t.Fatal(err)
	}
	t.Run("PLAIN", func(t *testing.T) {
		p := saslProbe(t, tb)
		if resp := p.roundTrip(handshake(0, "PLAIN")).(*kmsg.SASLHandshakeResponse); resp.ErrorCode != 0 {
			t.Fatalf("handshake: %d", resp.ErrorCode)
		}
		out, err := p.rawToken([]byte("\x00alice\x00alice-secret"))
		if err != nil || len(out) != 0 {
			t.Fatalf("raw PLAIN: %q %v", out, err)
		}
		p.roundTrip(metadataRequest())
	})
	t.Run("SCRAM", func(t *testing.T) {
		p := saslProbe(t, tb)
		p.roundTrip(apiVersionsRequest())
		p.roundTrip(handshake(0, "SCRAM-SHA-512"))
		sess, first, err := scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism().Authenticate(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		msg := first
		for done := false; !done; {
			out, err := p.rawToken(msg)
			if err != nil {
				t.Fatalf("raw SCRAM: %v", err)
			}
			if done, msg, err = sess.Challenge(out); err != nil {
				t.Fatalf("client: %v", err)
			}
		}
		p.roundTrip(metadataRequest())
	})
	t.Run("wrong password closes", func(t *testing.T) {
		p := saslProbe(t, tb)
		p.roundTrip(handshake(0, "PLAIN"))
		if out, err := p.rawToken([]byte("\x00alice\x00nope")); err == nil {
			t.Fatalf("answered %q", out)
		}
	})
}

// TestSASLReauthentication checks KIP-368 with an injected clock: the
// session lifetime in SaslAuthenticate v1, a request after expiry closing
// the connection, and a re-authentication in time keeping it, which may
// not change the principal.
func TestSASLReauthentication(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	tb := startBrokerWith(t, saslProps(map[string]string{"connections.max.reauth.ms": "60000"}), func(b *Broker) { b.saslNow = clock.Now })
	login := func(p *probeConn, user, pass string) *kmsg.SASLAuthenticateResponse {
		p.roundTrip(handshake(1, "PLAIN"))
		return p.roundTrip(authenticate(1, []byte("\x00"+user+"\x00"+pass))).(*kmsg.SASLAuthenticateResponse)
	}
	expired := saslProbe(t, tb)
	if resp := login(expired, "alice", "alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 60000 {
		t.Fatalf("authenticate: %d lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	renewed := saslProbe(t, tb)
	login(renewed, "alice", "alice-secret")
	changed := saslProbe(t, tb)
	login(changed, "alice", "alice-secret")
	expired.roundTrip(metadataRequest())

	clock.Advance(50 * time.Second)
	if resp := login(renewed, "alice", "alice-secret"); resp.ErrorCode != 0 || resp.SessionLifetimeMillis != 60000 {
		t.Fatalf("re-authenticate: %d lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	if resp := login(changed, "admin", "admin-secret"); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code || !strings.Contains(*resp.ErrorMessage, "Cannot change principals") {
		t.Fatalf("re-authenticate as another user: %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	clock.Advance(20 * time.Second)
	renewed.roundTrip(metadataRequest())
	expired.send(metadataRequest())
	if err := expired.closedByBroker(10 * time.Second); err != nil {
		t.Fatalf("request after expiry: %v", err)
	}
}

// TestSASLOAuthBearerLifetime: the session lasts no longer than the token.
func TestSASLOAuthBearerLifetime(t *testing.T) {
	tb := startBroker(t, saslProps(map[string]string{"connections.max.reauth.ms": "3600000"}))
	p := saslProbe(t, tb)
	p.roundTrip(handshake(1, "OAUTHBEARER"))
	exp := time.Now().Add(10 * time.Minute).Unix()
	token := unsecuredJWS(`{"sub":"dave","exp":` + strconv.FormatInt(exp, 10) + `}`)
	resp := p.roundTrip(authenticate(2, []byte("n,,\x01auth=Bearer "+token+"\x01\x01"))).(*kmsg.SASLAuthenticateResponse)
	if resp.ErrorCode != 0 || resp.SessionLifetimeMillis <= 0 || resp.SessionLifetimeMillis > 10*60*1000 {
		t.Fatalf("answer %d lifetime %d", resp.ErrorCode, resp.SessionLifetimeMillis)
	}
	p2 := saslProbe(t, tb)
	p2.roundTrip(handshake(1, "OAUTHBEARER"))
	bad := unsecuredJWS(`{"sub":"dave","exp":1}`)
	resp = p2.roundTrip(authenticate(2, []byte("n,,\x01auth=Bearer "+bad+"\x01\x01"))).(*kmsg.SASLAuthenticateResponse)
	if resp.ErrorCode != 0 || string(resp.SASLAuthBytes) != `{"status":"invalid_token"}` {
		t.Fatalf("expired token: %d %q", resp.ErrorCode, resp.SASLAuthBytes)
	}
	resp = p2.roundTrip(authenticate(2, []byte{1})).(*kmsg.SASLAuthenticateResponse)
	if resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("after the error: %d", resp.ErrorCode)
	}
	_ = auth.Anonymous
}

// TestSASLReauthenticationKgo: franz-go re-authenticates on its own
// connection before connections.max.reauth.ms ends, from the
// session_lifetime_ms Brook returns, and its requests keep working.
func TestSASLReauthenticationKgo(t *testing.T) {
	var mu sync.Mutex
	handshakes := map[*saslSession]int{}
	tb := startBrokerWith(t, saslProps(map[string]string{"connections.max.reauth.ms": "1500"}), func(b *Broker) {
		h := b.handlers[saslHandshakeKey]
		next := h.fn
		h.fn = func(ctx context.Context, r *request, req kmsg.Request) (reply, error) {
			mu.Lock()
			handshakes[r.sasl]++
			mu.Unlock()
			return next(ctx, r, req)
		}
		b.handlers[saslHandshakeKey] = h
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.saslAddr()), kgo.SASL(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testContext(t)
	testutil.Eventually(t, time.Minute, func() error {
		req := kmsg.NewPtrMetadataRequest()
		if _, err := req.RequestWith(ctx, cl); err != nil {
			t.Fatalf("metadata: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, n := range handshakes {
			if n >= 2 {
				return nil
			}
		}
		return errors.New("no connection has re-authenticated yet")
	})
}
