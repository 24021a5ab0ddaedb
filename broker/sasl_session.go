package broker

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/protocol"
)

// A SASL listener's connection goes through Kafka's SaslServerAuthenticator
// states: before authentication only ApiVersions (once) and SaslHandshake
// are served; after SaslHandshake v1 only SaslAuthenticate; after
// SaslHandshake v0 the client sends raw SASL tokens, size-prefixed without
// a Kafka header, and gets raw tokens back. Anything else closes the
// connection, as Kafka does. Once authenticated, the session may expire
// (connections.max.reauth.ms, or the OAUTHBEARER token's exp): a
// SaslHandshake then starts a re-authentication (KIP-368) when the client
// has shown it supports it (SaslAuthenticate v1+), and any other request
// after expiry closes the connection.
type saslPhase int

const (
	saslInitial      saslPhase = iota // ApiVersions or SaslHandshake
	saslHandshake                     // after ApiVersions: SaslHandshake
	saslAuthenticate                  // after SaslHandshake v1: SaslAuthenticate
	saslRawToken                      // after SaslHandshake v0: raw tokens
	saslComplete
)

// saslMaxReceiveSize bounds a frame before authentication, as Kafka's
// sasl.server.max.receive.size (524288) does.
const saslMaxReceiveSize = 512 << 10

const (
	saslHandshakeKey    = 17
	saslAuthenticateKey = 36
)

// saslSession is one connection's authentication state. Only the
// connection's applier uses it, except maxFrame, which the reader reads.
type saslSession struct {
	mechs     *auth.Mechanisms
	maxReauth map[string]time.Duration
	now       func() time.Time
	// principal is the connection's (conn.principal), set on success.
	principal *auth.Principal

	phase     saslPhase
	mechanism string
	server    auth.Server
	// reauthenticating is set from a re-authentication's SaslHandshake to
	// its end; badMechanism, when set, fails it at its first token.
	reauthenticating bool
	badMechanism     string
	// clientReauth: the client sent SaslAuthenticate v1+, so it knows
	// session lifetimes and re-authenticates (Kafka's
	// connectedClientSupportsReauthentication).
	clientReauth bool
	// expiry ends the session; zero: never.
	expiry time.Time
	// maxFrame is the largest frame the reader accepts now.
	maxFrame atomic.Int32
}

func newSASLSession(mechs *auth.Mechanisms, maxReauth map[string]time.Duration, now func() time.Time, principal *auth.Principal) *saslSession {
	s := &saslSession{mechs: mechs, maxReauth: maxReauth, now: now, principal: principal}
	s.maxFrame.Store(saslMaxReceiveSize)
	return s
}

// admit says whether a request with key may reach its handler; an error
// closes the connection without an answer. answered is false for an
// ApiVersions the broker answers only with UNSUPPORTED_VERSION (KIP-511),
// after which the client may send ApiVersions again, as Kafka allows.
func (s *saslSession) admit(key int16, answered bool) error {
	switch s.phase {
	case saslInitial:
		switch key {
		case protocol.ApiVersionsKey:
			if answered {
				s.phase = saslHandshake
			}
			return nil
		case saslHandshakeKey:
			return nil
		}
		return fmt.Errorf("unexpected Kafka request of type %d during SASL handshake", key)
	case saslHandshake:
		if key == saslHandshakeKey {
			return nil
		}
		return fmt.Errorf("unexpected Kafka request of type %d during SASL handshake", key)
	case saslAuthenticate:
		if key == saslAuthenticateKey {
			return nil
		}
		return fmt.Errorf("unexpected Kafka request of type %d during SASL authentication", key)
	case saslComplete:
		if !s.expiry.IsZero() && !s.now().Before(s.expiry) && !(key == saslHandshakeKey && s.clientReauth) {
			return fmt.Errorf("SASL session of %s expired at %s without re-authentication", s.principal, s.expiry.Format(time.RFC3339Nano))
		}
		return nil
	}
	return fmt.Errorf("SASL raw token expected")
}

// handshake answers SaslHandshake; closeAfter asks to close the
// connection once the answer is out.
func (s *saslSession) handshake(version int16, mechanism string) (code int16, enabled []string, closeAfter bool) {
	enabled = s.mechs.Enabled
	if s.phase == saslComplete {
		if !s.clientReauth {
			return kerr.IllegalSaslState.Code, enabled, false
		}
		// KIP-368: a handshake on an authenticated connection begins a
		// re-authentication, which must keep the mechanism.
		s.reauthenticating, s.badMechanism = true, ""
		if mechanism != s.mechanism {
			s.badMechanism = fmt.Sprintf("SASL mechanism '%s' requested by client is not supported for re-authentication of mechanism '%s'", mechanism, s.mechanism)
			s.phase = saslAuthenticate
			return 0, enabled, false
		}
	}
	srv, ok := s.mechs.NewServer(mechanism)
	if !ok {
		return kerr.UnsupportedSaslMechanism.Code, enabled, true
	}
	s.mechanism, s.server = mechanism, srv
	if version == 0 {
		s.phase = saslRawToken
	} else {
		s.phase = saslAuthenticate
	}
	return 0, enabled, false
}

// authResult is the outcome of one SaslAuthenticate.
type authResult struct {
	token           []byte
	code            int16
	message         *string
	sessionLifetime time.Duration
	closeAfter      bool
	// cause is the failure as the broker logs it; the client's message
	// may hide it.
	cause error
}

// authenticate answers SaslAuthenticate.
func (s *saslSession) authenticate(version int16, token []byte) authResult {
	if s.phase != saslAuthenticate {
		msg := "SaslAuthenticate request received after successful authentication"
		return authResult{code: kerr.IllegalSaslState.Code, message: &msg}
	}
	if version > 0 {
		s.clientReauth = true
	}
	fail := func(msg string, cause error) authResult {
		s.server = nil
		return authResult{code: kerr.SaslAuthenticationFailed.Code, message: &msg, closeAfter: true, cause: cause}
	}
	if s.badMechanism != "" {
		return fail(s.badMechanism, errors.New(s.badMechanism))
	}
	out, done, err := s.server.Step(token)
	if err != nil {
		return fail(auth.ClientMessage(err, s.mechanism, s.reauthenticating), err)
	}
	if out == nil {
		out = []byte{}
	}
	if !done {
		return authResult{token: out}
	}
	lifetime, err := s.complete()
	if err != nil {
		return fail(err.Error(), err)
	}
	return authResult{token: out, sessionLifetime: lifetime}
}

// rawToken evaluates a token sent without Kafka framing (after
// SaslHandshake v0); an error closes the connection without an answer,
// as Kafka does for these clients.
func (s *saslSession) rawToken(token []byte) ([]byte, error) {
	out, done, err := s.server.Step(token)
	if err != nil {
		return nil, fmt.Errorf("SASL %s: %w", s.mechanism, err)
	}
	if done {
		if _, err := s.complete(); err != nil {
			return nil, err
		}
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// complete ends a successful exchange: the principal (which a
// re-authentication may not change) and the session's lifetime, the
// shorter of connections.max.reauth.ms and the credential's own.
func (s *saslSession) complete() (time.Duration, error) {
	p := s.server.Principal()
	if s.reauthenticating && p != *s.principal {
		return 0, fmt.Errorf("Cannot change principals during re-authentication from %s.%s: %s.%s", s.principal.Type, s.principal.Name, p.Type, p.Name)
	}
	now := s.now()
	maxReauth := s.maxReauth[s.mechanism]
	credExpiry := s.server.Expiry()
	var lifetime time.Duration
	s.expiry = time.Time{}
	if maxReauth > 0 || !credExpiry.IsZero() {
		switch {
		case credExpiry.IsZero():
			lifetime = maxReauth
		case maxReauth <= 0:
			lifetime = credExpiry.Sub(now)
		default:
			lifetime = min(credExpiry.Sub(now), maxReauth)
		}
		lifetime = max(lifetime, 0)
		s.expiry = now.Add(lifetime)
	}
	*s.principal = p
	s.phase, s.server, s.reauthenticating = saslComplete, nil, false
	s.maxFrame.Store(0) // the broker's own limit from now on
	return lifetime, nil
}
