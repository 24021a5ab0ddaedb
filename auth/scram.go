package auth

import (
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ScramLookup finds a user's credential for one mechanism; ok is false for
// a user without one. An error means the store could not be read.
type ScramLookup func(user string) (cred ScramCredential, ok bool, err error)

type scramState int

const (
	scramReceiveClientFirst scramState = iota
	scramReceiveClientFinal
	scramComplete
	scramFailed
)

// scramServer is the server side of SCRAM (RFC 5802) as Kafka's
// ScramSaslServer runs it: client-first, server-first, client-final,
// server-final. A fresh server nonce per exchange means a replayed
// client-final message never verifies.
type scramServer struct {
	mech   ScramMechanism
	lookup ScramLookup
	rand   io.Reader
	state  scramState

	cred            ScramCredential
	gs2Header       string
	clientFirstBare string
	serverFirst     string
	nonce           string // client nonce + server nonce
	user            string
}

// NewScramServer starts a SCRAM exchange; rand supplies the server nonce.
func NewScramServer(mech ScramMechanism, lookup ScramLookup, rand io.Reader) Server {
	return &scramServer{mech: mech, lookup: lookup, rand: rand}
}

// maxScramMessage bounds a SCRAM message; real ones are under 300 bytes.
const maxScramMessage = 4096

func (s *scramServer) Step(in []byte) ([]byte, bool, error) {
	out, done, err := s.step(in)
	if err != nil {
		s.state, s.cred = scramFailed, ScramCredential{}
	}
	return out, done, err
}

func (s *scramServer) step(in []byte) ([]byte, bool, error) {
	if len(in) > maxScramMessage {
		return nil, false, privateFailure("SCRAM message of %d bytes", len(in))
	}
	switch s.state {
	case scramReceiveClientFirst:
		return s.clientFirst(string(in))
	case scramReceiveClientFinal:
		return s.clientFinal(string(in))
	default:
		return nil, false, ErrUnexpectedToken
	}
}

func (s *scramServer) clientFirst(msg string) ([]byte, bool, error) {
	m, err := ParseScramClientFirst(msg)
	if err != nil {
		return nil, false, privateFailure("Invalid SCRAM client first message: %v", err)
	}
	if m.Extensions["tokenauth"] == "true" {
		// Delegation tokens are not implemented: no token has an owner.
		return nil, false, privateFailure("Token Authentication failed: Invalid tokenId : %s", m.User)
	}
	cred, ok, err := s.lookup(m.User)
	if err != nil {
		return nil, false, privateFailure("Authentication failed: Credentials could not be obtained: %v", err)
	}
	if !ok {
		return nil, false, privateFailure("Authentication failed: Invalid user credentials")
	}
	if m.AuthzID != "" && m.AuthzID != m.User {
		return nil, false, publicFailure("Authentication failed: Client requested an authorization id that is different from username")
	}
	if cred.Iterations < s.mech.MinIterations {
		return nil, false, privateFailure("Iterations %d is less than the minimum %d for %s", cred.Iterations, s.mech.MinIterations, s.mech.Name)
	}
	var raw [24]byte
	if _, err := io.ReadFull(s.rand, raw[:]); err != nil {
		return nil, false, fmt.Errorf("auth: SCRAM server nonce: %w", err)
	}
	s.cred, s.user, s.gs2Header, s.clientFirstBare = cred, m.User, m.GS2Header, m.Bare
	s.nonce = m.Nonce + base64.RawURLEncoding.EncodeToString(raw[:])
	s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(int(cred.Iterations))
	s.state = scramReceiveClientFinal
	return []byte(s.serverFirst), false, nil
}

func (s *scramServer) clientFinal(msg string) ([]byte, bool, error) {
	m, err := ParseScramClientFinal(msg)
	if err != nil {
		return nil, false, privateFailure("Invalid SCRAM client final message: %v", err)
	}
	// Kafka 3.8.1 and 3.9 (the CVE-2024-56128 fix) accept a nonce that
	// ends with the server's, because librdkafka before 2.6.1 sends the
	// client nonce twice (librdkafka#4895); Kafka 4 wants it equal. Brook
	// follows 3.9, so that Debian's kcat (librdkafka 2.0) authenticates.
	// The server nonce is still in it: a replay does not verify.
	if !strings.HasSuffix(m.Nonce, s.nonce) {
		return nil, false, privateFailure("Invalid client nonce in the final client message.")
	}
	if m.ChannelBinding != s.gs2Header {
		return nil, false, privateFailure("Invalid channel binding in the final client message.")
	}
	authMessage := s.clientFirstBare + "," + s.serverFirst + "," + m.WithoutProof
	clientSignature := s.mech.hmac(s.cred.StoredKey, authMessage)
	if len(m.Proof) != len(clientSignature) {
		return nil, false, privateFailure("Invalid client credentials")
	}
	clientKey := make([]byte, len(clientSignature))
	for i := range clientKey {
		clientKey[i] = m.Proof[i] ^ clientSignature[i]
	}
	if subtle.ConstantTimeCompare(s.mech.hash(clientKey), s.cred.StoredKey) != 1 {
		return nil, false, privateFailure("Invalid client credentials")
	}
	serverSignature := s.mech.hmac(s.cred.ServerKey, authMessage)
	s.state, s.cred = scramComplete, ScramCredential{}
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSignature)), true, nil
}

func (s *scramServer) Principal() Principal { return User(s.user) }
func (s *scramServer) Expiry() time.Time    { return time.Time{} }

// ScramClientFirst is a parsed client-first message:
//
//	gs2-header = "n," [ "a=" saslname ] ","
//	client-first-message-bare = "n=" saslname ",r=" nonce ["," extensions]
type ScramClientFirst struct {
	GS2Header  string
	AuthzID    string
	User       string
	Nonce      string
	Extensions map[string]string
	Bare       string
}

// ParseScramClientFirst parses a client-first message as Kafka's
// ClientFirstMessage does: no channel binding ("n" only), ASCII names with
// =2C and =3D escapes, and Kafka's key=value extensions after the nonce.
func ParseScramClientFirst(msg string) (ScramClientFirst, error) {
	var m ScramClientFirst
	rest, ok := strings.CutPrefix(msg, "n,")
	if !ok {
		return m, fmt.Errorf("channel binding not supported or no gs2 header")
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return m, fmt.Errorf("no gs2 header end")
	}
	if authz != "" {
		a, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return m, fmt.Errorf("bad authorization id %q", authz)
		}
		name, err := decodeSaslName(a)
		if err != nil {
			return m, err
		}
		m.AuthzID = name
	}
	m.GS2Header, m.Bare = "n,"+authz+",", bare
	fields := strings.Split(bare, ",")
	if len(fields) < 2 {
		return m, fmt.Errorf("no user name and nonce")
	}
	u, ok := strings.CutPrefix(fields[0], "n=")
	if !ok {
		return m, fmt.Errorf("no user name")
	}
	name, err := decodeSaslName(u)
	if err != nil {
		return m, err
	}
	m.User = name
	nonce, ok := strings.CutPrefix(fields[1], "r=")
	if !ok || !printable(nonce) {
		return m, fmt.Errorf("bad nonce")
	}
	m.Nonce = nonce
	m.Extensions = map[string]string{}
	for _, f := range fields[2:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return m, fmt.Errorf("bad extension %q", f)
		}
		m.Extensions[k] = v
	}
	return m, nil
}

// ScramClientFinal is a parsed client-final message:
// "c=" base64(gs2-header) ",r=" nonce ["," extensions] ",p=" base64(proof).
type ScramClientFinal struct {
	ChannelBinding string // decoded
	Nonce          string
	Proof          []byte
	WithoutProof   string
}

// ParseScramClientFinal parses a client-final message.
func ParseScramClientFinal(msg string) (ScramClientFinal, error) {
	var m ScramClientFinal
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return m, fmt.Errorf("no proof")
	}
	m.WithoutProof = msg[:i]
	proof, err := base64.StdEncoding.DecodeString(msg[i+3:])
	if err != nil {
		return m, fmt.Errorf("proof: %w", err)
	}
	m.Proof = proof
	fields := strings.Split(m.WithoutProof, ",")
	if len(fields) < 2 {
		return m, fmt.Errorf("no channel binding and nonce")
	}
	c, ok := strings.CutPrefix(fields[0], "c=")
	if !ok {
		return m, fmt.Errorf("no channel binding")
	}
	cb, err := base64.StdEncoding.DecodeString(c)
	if err != nil {
		return m, fmt.Errorf("channel binding: %w", err)
	}
	m.ChannelBinding = string(cb)
	nonce, ok := strings.CutPrefix(fields[1], "r=")
	if !ok || !printable(nonce) {
		return m, fmt.Errorf("bad nonce")
	}
	m.Nonce = nonce
	return m, nil
}

// decodeSaslName undoes RFC 5802's escapes (=2C is ',', =3D is '=');
// Kafka's pattern allows ASCII only and no other '='.
func decodeSaslName(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("empty name")
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=':
			switch {
			case strings.HasPrefix(s[i:], "=2C"):
				b.WriteByte(',')
			case strings.HasPrefix(s[i:], "=3D"):
				b.WriteByte('=')
			default:
				return "", fmt.Errorf("bad escape in name %q", s)
			}
			i += 2
		case c == 0 || c > 0x7f || c == ',':
			return "", fmt.Errorf("bad character in name %q", s)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// printable is RFC 5802's printable: %x21-7E except ','.
func printable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e || s[i] == ',' {
			return false
		}
	}
	return true
}
