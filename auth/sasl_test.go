package auth

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// exchange runs a franz-go client mechanism against a server state
// machine, as the broker's SaslAuthenticate loop does.
func exchange(t *testing.T, client sasl.Mechanism, server Server) (Principal, error) {
	t.Helper()
	sess, msg, err := client.Authenticate(context.Background(), "broker")
	if err != nil {
		t.Fatalf("client start: %v", err)
	}
	for i := 0; i < 10; i++ {
		out, done, err := server.Step(msg)
		if err != nil {
			return Principal{}, err
		}
		cdone, next, cerr := sess.Challenge(out)
		if cerr != nil {
			t.Fatalf("client refused the server's answer %q: %v", out, cerr)
		}
		if done {
			if !cdone {
				t.Fatalf("server done but the client is not")
			}
			return server.Principal(), nil
		}
		if cdone {
			t.Fatalf("client done but the server is not")
		}
		msg = next
	}
	t.Fatal("exchange did not end")
	return Principal{}, nil
}

func isPublic(err error) bool {
	var f *Failure
	return errors.As(err, &f) && f.Public
}

func TestPlain(t *testing.T) {
	jaas, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`)
	if err != nil {
		t.Fatal(err)
	}
	users := PlainUsersFromJAAS(jaas)
	p, err := exchange(t, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), NewPlainServer(users))
	if err != nil || p != User("alice") {
		t.Fatalf("alice: %v %v", p, err)
	}
	for _, c := range []struct {
		msg    string
		public bool
	}{
		{"\x00alice\x00wrong", true},
		{"\x00bob\x00alice-secret", true},
		{"\x00alice\x00", false},
		{"\x00\x00alice-secret", false},
		{"alice", false},
		{"admin\x00alice\x00alice-secret", true},
		{"", false},
	} {
		_, done, err := NewPlainServer(users).Step([]byte(c.msg))
		if err == nil || done {
			t.Errorf("%q accepted", c.msg)
		} else if isPublic(err) != c.public {
			t.Errorf("%q: %v public=%v, want %v", c.msg, err, isPublic(err), c.public)
		}
	}
	// As Kafka: what follows a third NUL is not part of the password.
	if _, done, err := NewPlainServer(users).Step([]byte("\x00alice\x00alice-secret\x00junk")); err != nil || !done {
		t.Errorf("password followed by NUL: %v", err)
	}
	if msg := ClientMessage(errors.New("x"), "PLAIN", false); msg != "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN" {
		t.Errorf("generic message %q", msg)
	}
}

func scramStore(t *testing.T, m ScramMechanism, users map[string]string) ScramLookup {
	t.Helper()
	creds := map[string]ScramCredential{}
	for u, pw := range users {
		c, err := m.NewCredential(pw, []byte("salt-"+u), 4096)
		if err != nil {
			t.Fatal(err)
		}
		// Stored and read back in Kafka's text form, as the store does.
		if creds[u], err = ParseScramCredential(FormatScramCredential(c)); err != nil {
			t.Fatal(err)
		}
	}
	return func(u string) (ScramCredential, bool, error) {
		c, ok := creds[u]
		return c, ok, nil
	}
}

func TestScram(t *testing.T) {
	for _, m := range ScramMechanisms {
		t.Run(m.Name, func(t *testing.T) {
			lookup := scramStore(t, m, map[string]string{"alice": "alice-secret", "a,b=c": "pw"})
			client := func(a scram.Auth) sasl.Mechanism {
				if m.Name == MechanismScramSHA256 {
					return a.AsSha256Mechanism()
				}
				return a.AsSha512Mechanism()
			}
			p, err := exchange(t, client(scram.Auth{User: "alice", Pass: "alice-secret"}), NewScramServer(m, lookup, rand.Reader))
			if err != nil || p != User("alice") {
				t.Fatalf("alice: %v %v", p, err)
			}
			if p, err := exchange(t, client(scram.Auth{User: "a,b=c", Pass: "pw"}), NewScramServer(m, lookup, rand.Reader)); err != nil || p != User("a,b=c") {
				t.Fatalf("escaped name: %v %v", p, err)
			}
			if _, err := exchange(t, client(scram.Auth{User: "alice", Pass: "wrong"}), NewScramServer(m, lookup, rand.Reader)); err == nil || isPublic(err) {
				t.Fatalf("wrong password: %v", err)
			}
			if _, err := exchange(t, client(scram.Auth{User: "bob", Pass: "x"}), NewScramServer(m, lookup, rand.Reader)); err == nil || isPublic(err) {
				t.Fatalf("unknown user: %v", err)
			}
			if _, err := exchange(t, client(scram.Auth{User: "alice", Pass: "alice-secret", Zid: "admin"}), NewScramServer(m, lookup, rand.Reader)); err == nil || !isPublic(err) {
				t.Fatalf("other authzid: %v", err)
			}
		})
	}
}

// TestScramReplay replays a client-final message recorded from a good
// exchange against a new exchange: the server's nonce differs, so it is
// refused, even with the same client-first message.
func TestScramReplay(t *testing.T) {
	m := ScramSHA256
	lookup := scramStore(t, m, map[string]string{"alice": "alice-secret"})
	sess, first, err := scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism().Authenticate(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	s1 := NewScramServer(m, lookup, rand.Reader)
	serverFirst, _, err := s1.Step(first)
	if err != nil {
		t.Fatal(err)
	}
	_, final, err := sess.Challenge(serverFirst)
	if err != nil {
		t.Fatal(err)
	}
	if _, done, err := s1.Step(final); err != nil || !done {
		t.Fatalf("original exchange: %v", err)
	}
	s2 := NewScramServer(m, lookup, rand.Reader)
	if _, _, err := s2.Step(first); err != nil {
		t.Fatal(err)
	}
	if _, done, err := s2.Step(final); err == nil || done {
		t.Fatal("replayed client-final message accepted")
	}
	// A finished or failed exchange takes no more tokens.
	if _, _, err := s1.Step(final); !errors.Is(err, ErrUnexpectedToken) {
		t.Fatalf("token after completion: %v", err)
	}
	if _, _, err := s2.Step(final); err == nil {
		t.Fatal("token after failure accepted")
	}
}

// TestScramCredentialFormat checks Kafka's stored form against a
// credential Kafka 3.9's kafka-configs wrote (password "alice-secret",
// SCRAM-SHA-256, 4096 iterations), so that credentials created by Kafka's
// tools verify here.
func TestScramCredentialFormat(t *testing.T) {
	salt := []byte("fixed-salt")
	c, err := ScramSHA256.NewCredential("alice-secret", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	s := FormatScramCredential(c)
	if !strings.HasPrefix(s, "salt="+base64.StdEncoding.EncodeToString(salt)+",stored_key=") || !strings.HasSuffix(s, ",iterations=4096") || !strings.Contains(s, ",server_key=") {
		t.Fatalf("format %q", s)
	}
	back, err := ParseScramCredential(s)
	if err != nil || !bytes.Equal(back.StoredKey, c.StoredKey) || !bytes.Equal(back.ServerKey, c.ServerKey) || back.Iterations != 4096 {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	for _, bad := range []string{"", "salt=AA==", "salt=AA==,stored_key=AA==,server_key=AA==,iterations=x", "salt=!,stored_key=AA==,server_key=AA==,iterations=1", "junk"} {
		if _, err := ParseScramCredential(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	// RFC 7677's test vector: user "user", password "pencil", salt
	// W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations.
	salt, _ = base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	c, _ = ScramSHA256.NewCredential("pencil", salt, 4096)
	cf := "n=user,r=rOprNGfwEbeRWgbNEkqO"
	sf := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
	cfinal := "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	sig := ScramSHA256.hmac(c.ServerKey, cf+","+sf+","+cfinal)
	if got := base64.StdEncoding.EncodeToString(sig); got != "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Fatalf("RFC 7677 server signature %s", got)
	}
}

func unsecuredToken(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + "."
}

func TestOAuthBearerUnsecured(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	jaas, err := ParseJAAS(`org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="kafka" unsecuredValidatorAllowableClockSkewMs="1000";`)
	if err != nil {
		t.Fatal(err)
	}
	v, err := UnsecuredValidatorFromJAAS(jaas, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	good := unsecuredToken(`{"sub":"alice","exp":1700000600,"iat":1700000000,"scope":["kafka","other"]}`)
	srv := NewOAuthBearerServer(v)
	p, err := exchange(t, oauth.Auth{Token: good, Extensions: map[string]string{"traceId": "x"}}.AsMechanism(), srv)
	if err != nil || p != User("alice") {
		t.Fatalf("good token: %v %v", p, err)
	}
	if exp := srv.Expiry(); !exp.Equal(time.Unix(1700000600, 0)) {
		t.Fatalf("expiry %v", exp)
	}
	for name, tok := range map[string]string{
		"expired":      unsecuredToken(`{"sub":"alice","exp":1699999999,"scope":"kafka"}`),
		"no exp":       unsecuredToken(`{"sub":"alice","scope":"kafka"}`),
		"no sub":       unsecuredToken(`{"exp":1700000600,"scope":"kafka"}`),
		"future iat":   unsecuredToken(`{"sub":"alice","exp":1700000600,"iat":1700000002,"scope":"kafka"}`),
		"exp <= iat":   unsecuredToken(`{"sub":"alice","exp":1700000000.5,"iat":1700000000.5,"scope":"kafka"}`),
		"no scope":     unsecuredToken(`{"sub":"alice","exp":1700000600}`),
		"signed":       unsecuredToken(`{"sub":"alice","exp":1700000600,"scope":"kafka"}`) + "sig",
		"alg":          base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256"}`)) + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"a","exp":1700000600}`)) + ".",
		"not json":     base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + ".bm90IGpzb24.",
		"two parts":    "abc.def",
		"double dots":  "abc..def",
		"sub a number": unsecuredToken(`{"sub":5,"exp":1700000600,"scope":"kafka"}`),
	} {
		s := NewOAuthBearerServer(v)
		sess, first, _ := oauth.Auth{Token: tok}.AsMechanism().Authenticate(context.Background(), "")
		out, done, err := s.Step(first)
		if err != nil {
			// A token the client form refuses (dots, characters) fails at once.
			if name != "double dots" && name != "signed" && name != "two parts" {
				t.Errorf("%s: refused with %v, want a JSON error", name, err)
			}
			continue
		}
		if done || !bytes.HasPrefix(out, []byte(`{"status":"`)) {
			t.Errorf("%s: answer %q done=%v", name, out, done)
			continue
		}
		// franz-go's client answers the error with \x01 itself.
		_, next, _ := sess.Challenge(out)
		if next == nil {
			next = []byte{1}
		}
		if _, _, err := s.Step([]byte{1}); err == nil || !isPublic(err) || !strings.Contains(err.Error(), "status") {
			t.Errorf("%s: after \\x01: %v", name, err)
		}
	}
	// Authorization id other than the token's principal.
	if _, err := exchange(t, oauth.Auth{Token: good, Zid: "bob"}.AsMechanism(), NewOAuthBearerServer(v)); err == nil {
		t.Error("other authzid accepted")
	}
	for _, bad := range []string{"", "n,,", "n,,\x01auth=Basic abc\x01\x01", "y,,\x01auth=Bearer " + good + "\x01\x01", "n,,\x01auth=Bearer " + good + "\x01"} {
		if _, done, err := NewOAuthBearerServer(v).Step([]byte(bad)); err == nil || done {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseJAAS(t *testing.T) {
	got, err := ParseJAAS(`
		// a comment
		org.apache.kafka.common.security.scram.ScramLoginModule Required
		  username=admin /* inline */ password="a \"quoted\" pass;=";
		org.apache.kafka.common.security.plain.PlainLoginModule optional user_x="y";`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].LoginModule != ScramLoginModule || got[0].Flag != "required" ||
		got[0].Options["username"] != "admin" || got[0].Options["password"] != `a "quoted" pass;=` || got[1].Options["user_x"] != "y" {
		t.Fatalf("%+v", got)
	}
	for _, bad := range []string{"", "Module", "Module required", "Module sometimes;", `Module required a="b"`, `Module required a=;`, `Module required a "b";`, `Module required a="b;`, "Module required /* x"} {
		if _, err := ParseJAAS(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestScramLibrdkafkaNonce authenticates as librdkafka before 2.6.1 does,
// with the client nonce sent twice in the client-final message, which
// Kafka 3.9 accepts; a final message without the server's nonce is still
// refused.
func TestScramLibrdkafkaNonce(t *testing.T) {
	m := ScramSHA256
	lookup := scramStore(t, m, map[string]string{"alice": "alice-secret"})
	cnonce := "fyko+d2lbbFgONRv9qkxdawL"
	final := func(serverFirst, nonce string) string {
		salted, _ := m.SaltedPassword("alice-secret", []byte("salt-alice"), 4096)
		clientKey := m.hmac(salted, "Client Key")
		withoutProof := "c=biws,r=" + nonce
		sig := m.hmac(m.hash(clientKey), "n=alice,r="+cnonce+","+serverFirst+","+withoutProof)
		proof := make([]byte, len(sig))
		for i := range proof {
			proof[i] = clientKey[i] ^ sig[i]
		}
		return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)
	}
	for _, c := range []struct {
		name string
		ok   bool
		r    func(full string) string
	}{
		{"as RFC 5802", true, func(full string) string { return full }},
		{"as librdkafka 2.0", true, func(full string) string { return cnonce + full }},
		{"client nonce only", false, func(string) string { return cnonce }},
	} {
		s := NewScramServer(m, lookup, rand.Reader)
		sf, _, err := s.Step([]byte("n,,n=alice,r=" + cnonce))
		if err != nil {
			t.Fatal(err)
		}
		full := strings.TrimPrefix(strings.Split(string(sf), ",")[0], "r=")
		_, done, err := s.Step([]byte(final(string(sf), c.r(full))))
		if done != c.ok {
			t.Errorf("%s: done=%v err=%v", c.name, done, err)
		}
	}
}
