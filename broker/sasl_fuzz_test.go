package broker

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"math"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

// FuzzSASLSession drives one connection's SASL state machine with
// arbitrary requests and tokens, as a raw socket could: it never panics,
// and never authenticates without the password.
func FuzzSASLSession(f *testing.F) {
	f.Add([]byte{17, 1, 'P', 36, 1, 0, 'a', 0, 'x'})
	f.Add([]byte{18, 3, 17, 0, 'P', 0xff, 0, 'a', 0, 's'})
	f.Add([]byte{36, 2, 3, 9, 17, 1, 'S', 36, 1, 'n', ',', ',', 'n', '=', 'a', ',', 'r', '=', 'x'})
	f.Add([]byte{})
	mechs := &auth.Mechanisms{
		Enabled: []string{"PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"},
		Plain:   auth.PlainUsers{"a": "secret"},
		Scram: func(auth.ScramMechanism) auth.ScramLookup {
			return func(string) (auth.ScramCredential, bool, error) { return auth.ScramCredential{}, false, nil }
		},
		OAuthBearer: &auth.UnsecuredValidator{PrincipalClaimName: "sub", ScopeClaimName: "scope", Now: time.Now},
		Rand:        rand.Reader,
	}
	names := map[byte]string{'P': "PLAIN", 'S': "SCRAM-SHA-256", 'O': "OAUTHBEARER", 'G': "GSSAPI"}
	f.Fuzz(func(t *testing.T, script []byte) {
		orig := script
		principal := auth.Anonymous
		s := newSASLSession(mechs, map[string]time.Duration{"PLAIN": time.Minute}, time.Now, &principal)
		for len(script) >= 2 {
			key, version := int16(script[0]), int16(script[1]%3)
			script = script[2:]
			// The token runs to the next 0xff.
			tok := script
			if i := bytes.IndexByte(script, 0xff); i >= 0 {
				tok, script = script[:i], script[i+1:]
			} else {
				script = nil
			}
			if s.phase == saslRawToken {
				if _, err := s.rawToken(tok); err != nil {
					return
				}
				continue
			}
			if s.admit(key, true) != nil {
				return
			}
			switch key {
			case saslHandshakeKey:
				name := ""
				if len(tok) > 0 {
					name = names[tok[0]]
				}
				if _, _, closeAfter := s.handshake(version, name); closeAfter {
					return
				}
			case saslAuthenticateKey:
				if s.authenticate(version, tok).closeAfter {
					return
				}
			}
		}
		// PLAIN's user needs its password; SCRAM has no user; an
		// unsecured token may name anyone.
		if principal == auth.User("a") && !bytes.Contains(orig, []byte("secret")) && !bytes.Contains(orig, []byte("auth=")) {
			t.Fatalf("authenticated without the password: %q", orig)
		}
	})
}

// TestSASLGarbageFrames sends truncated, oversized and random frames to a
// SASL listener from raw sockets, before and during authentication: each
// connection is closed (never a panic, never a hang), and the broker still
// serves a proper client afterwards.
func TestSASLGarbageFrames(t *testing.T) {
	tb := startBroker(t, saslProps(nil))
	frame := func(b []byte) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...) }
	hs := kmsg.NewRequestFormatter(kmsg.FormatterClientID("x")).AppendRequest(nil, handshake(1, "SCRAM-SHA-256"), 1)
	hs0 := kmsg.NewRequestFormatter(kmsg.FormatterClientID("x")).AppendRequest(nil, handshake(0, "PLAIN"), 1)
	random := make([]byte, 300)
	rand.Read(random)
	for name, payload := range map[string][]byte{
		"empty frame":             frame(nil),
		"short frame":             frame([]byte{0, 17}),
		"random frame":            frame(random),
		"oversized before auth":   binary.BigEndian.AppendUint32(nil, saslMaxReceiveSize+1),
		"negative size":           binary.BigEndian.AppendUint32(nil, math.MaxUint32),
		"garbage after handshake": append(hs, frame(random)...),
		"truncated authenticate":  append(hs, frame(random)[:40]...),
		"raw garbage after v0":    append(hs0, frame(random)...),
		"raw empty after v0":      append(hs0, frame(nil)...),
	} {
		t.Run(name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", tb.saslAddr(), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Write(payload)
			if name == "truncated authenticate" {
				// The broker waits for the rest until the peer hangs up.
				c.(*net.TCPConn).CloseWrite()
			}
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			var buf [4096]byte
			for {
				if _, err := c.Read(buf[:]); err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						t.Fatal("connection still open after 30s")
					}
					break
				}
			}
		})
	}
	p := saslProbe(t, tb)
	p.roundTrip(handshake(1, "PLAIN"))
	if resp := p.roundTrip(authenticate(1, []byte("\x00alice\x00alice-secret"))).(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != 0 {
		t.Fatalf("authenticate after the garbage: %d", resp.ErrorCode)
	}
}
