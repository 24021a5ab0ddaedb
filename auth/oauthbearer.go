package auth

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// OAuthBearerToken is a validated bearer token.
type OAuthBearerToken struct {
	Principal string
	// Expiry is the token's exp; the session may last no longer.
	Expiry time.Time
	Scope  []string
}

// TokenError is why a token was refused, sent to the client as RFC 7628's
// JSON error ({"status":"invalid_token"}); Reason is for the broker's log.
type TokenError struct {
	Status       string // invalid_token or insufficient_scope
	Scope        string
	OpenIDConfig string
	Reason       string
}

func (e *TokenError) Error() string { return "auth: token refused: " + e.Reason }

// TokenValidator validates the bearer token of an OAUTHBEARER exchange.
// Kafka's default on the broker is the unsecured-JWS validator
// (UnsecuredValidator); a validator of signed tokens against a JWKS
// implements the same interface.
type TokenValidator interface {
	Validate(token string) (OAuthBearerToken, *TokenError)
}

// oauthClientFirstGo matches the client's initial response (RFC 7628 and
// Kafka's OAuthBearerClientInitialResponse): a gs2 header, then
// \x01-separated key=value pairs of which auth carries the token, ended by
// \x01\x01.
// Names are checked apart (decodeSaslName), as Go's regexp has no class
// intersection.
var oauthClientFirstGo = regexp.MustCompile("^n,(?:a=([^,]+))?,\x01auth=(\\w+) +([-_.a-zA-Z0-9]+)((?:\x01[A-Za-z]+=[\x02-\x7f]+)*)\x01\x01$")

const invalidOAuthClientFirst = "Invalid OAUTHBEARER client first message"

type oauthServer struct {
	validator TokenValidator
	// errorMessage is the JSON error sent after a refused token; the
	// client answers it with a lone \x01 and the exchange then fails.
	errorMessage string
	done         bool
	token        OAuthBearerToken
}

// NewOAuthBearerServer starts an OAUTHBEARER exchange.
func NewOAuthBearerServer(v TokenValidator) Server { return &oauthServer{validator: v} }

// maxOAuthMessage bounds the client's message; tokens are a few KB.
const maxOAuthMessage = 64 << 10

func (s *oauthServer) Step(in []byte) ([]byte, bool, error) {
	if s.done {
		return nil, false, ErrUnexpectedToken
	}
	if len(in) == 1 && in[0] == 0x01 && s.errorMessage != "" {
		return nil, false, publicFailure("%s", s.errorMessage)
	}
	s.errorMessage = ""
	if len(in) > maxOAuthMessage {
		return nil, false, privateFailure("%s: %d bytes", invalidOAuthClientFirst, len(in))
	}
	m := oauthClientFirstGo.FindStringSubmatch(string(in))
	if m == nil {
		return nil, false, privateFailure("%s", invalidOAuthClientFirst)
	}
	authzid := ""
	if m[1] != "" {
		name, err := decodeSaslName(m[1])
		if err != nil {
			return nil, false, privateFailure("%s", invalidOAuthClientFirst)
		}
		authzid = name
	}
	if !strings.EqualFold(m[2], "bearer") {
		return nil, false, privateFailure("Invalid scheme in OAUTHBEARER client first message: %s", m[2])
	}
	tok, terr := s.validator.Validate(m[3])
	if terr != nil {
		s.errorMessage = jsonTokenError(terr)
		return []byte(s.errorMessage), false, nil
	}
	if authzid != "" && authzid != tok.Principal {
		return nil, false, publicFailure("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", authzid, tok.Principal)
	}
	s.done, s.token = true, tok
	return []byte{}, true, nil
}

// jsonTokenError is Kafka's jsonErrorResponse, spacing included.
func jsonTokenError(e *TokenError) string {
	out := fmt.Sprintf(`{"status":"%s"`, e.Status)
	if e.Scope != "" {
		out += fmt.Sprintf(`, "scope":"%s"`, e.Scope)
	}
	if e.OpenIDConfig != "" {
		out += fmt.Sprintf(`, "openid-configuration":"%s"`, e.OpenIDConfig)
	}
	return out + "}"
}

func (s *oauthServer) Principal() Principal { return User(s.token.Principal) }
func (s *oauthServer) Expiry() time.Time    { return s.token.Expiry }
