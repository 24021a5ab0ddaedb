package auth

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// SASL mechanism names, as clients send them in SaslHandshake.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
	MechanismOAuthBearer = "OAUTHBEARER"
	MechanismGSSAPI      = "GSSAPI"
)

// Server is the server side of one SASL exchange: a state machine that
// takes each token the client sends and returns the token to send back.
// It does no I/O; credentials come through the lookups it was built with.
type Server interface {
	// Step evaluates the client's next token. done is true once the
	// exchange has succeeded (out is then the last token to send, maybe
	// empty). An error ends the exchange: the connection is refused.
	Step(in []byte) (out []byte, done bool, err error)
	// Principal is who authenticated; valid once Step reported done.
	Principal() Principal
	// Expiry is when the credential used expires (an OAUTHBEARER
	// token's exp), bounding the session; zero when it does not.
	Expiry() time.Time
}

// Failure is an authentication failure. Message is what the client is
// told in the SaslAuthenticate error message. Kafka tells the client its
// mechanism's own message only for failures that reveal nothing (a
// SaslAuthenticationException); the others (a SaslException: unknown
// user, malformed token) get a generic message, so that a client cannot
// learn which users exist.
type Failure struct {
	// Public: Message may be shown to the client as it is.
	Public  bool
	Message string
}

func (f *Failure) Error() string { return "auth: " + f.Message }

// ErrUnexpectedToken means a token arrived after the exchange ended.
var ErrUnexpectedToken = errors.New("auth: token after the SASL exchange ended")

// publicFailure is a failure whose message the client sees.
func publicFailure(format string, args ...any) error {
	return &Failure{Public: true, Message: fmt.Sprintf(format, args...)}
}

// privateFailure is a failure the client sees only as "invalid credentials".
func privateFailure(format string, args ...any) error {
	return &Failure{Message: fmt.Sprintf(format, args...)}
}

// ClientMessage is the error message a client gets for err during
// authentication (or re-authentication) with mechanism, as Kafka's
// SaslServerAuthenticator words it.
func ClientMessage(err error, mechanism string, reauthenticating bool) string {
	var f *Failure
	if errors.As(err, &f) && f.Public {
		return f.Message
	}
	during := "authentication"
	if reauthenticating {
		during = "re-authentication"
	}
	return "Authentication failed during " + during + " due to invalid credentials with SASL mechanism " + mechanism
}

// Mechanisms is what one listener needs to start SASL exchanges: its
// enabled mechanisms and where each finds its credentials.
type Mechanisms struct {
	// Enabled lists the mechanisms in sasl.enabled.mechanisms order, as
	// SaslHandshake answers them.
	Enabled []string
	// Plain holds the PLAIN users of the listener's JAAS config.
	Plain PlainUsers
	// Scram finds SCRAM credentials (the user's config in ZooKeeper or
	// the embedded store).
	Scram func(m ScramMechanism) ScramLookup
	// OAuthBearer validates bearer tokens.
	OAuthBearer TokenValidator
	// Rand supplies SCRAM server nonces.
	Rand io.Reader
}

// IsEnabled reports whether mech is enabled.
func (m *Mechanisms) IsEnabled(mech string) bool {
	for _, e := range m.Enabled {
		if e == mech {
			return true
		}
	}
	return false
}

// NewServer starts an exchange of an enabled mechanism; false when the
// mechanism is not enabled or not implemented (GSSAPI).
func (m *Mechanisms) NewServer(mech string) (Server, bool) {
	if !m.IsEnabled(mech) {
		return nil, false
	}
	switch mech {
	case MechanismPlain:
		return NewPlainServer(m.Plain), true
	case MechanismOAuthBearer:
		if m.OAuthBearer == nil {
			return nil, false
		}
		return NewOAuthBearerServer(m.OAuthBearer), true
	}
	if sm, ok := ScramMechanismByName(mech); ok && m.Scram != nil {
		return NewScramServer(sm, m.Scram(sm), m.Rand), true
	}
	return nil, false
}
