package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// ScramMechanism is SCRAM-SHA-256 or SCRAM-SHA-512 (RFC 5802, RFC 7677).
type ScramMechanism struct {
	Name string
	// Type is the mechanism's id in Describe/AlterUserScramCredentials.
	Type          int8
	newHash       func() hash.Hash
	MinIterations int32
}

// The SCRAM mechanisms Kafka supports, with its minimum iterations
// (ScramMechanism.minIterations); Kafka refuses more than
// MaxScramIterations in AlterUserScramCredentials.
var (
	ScramSHA256 = ScramMechanism{Name: MechanismScramSHA256, Type: 1, newHash: sha256.New, MinIterations: 4096}
	ScramSHA512 = ScramMechanism{Name: MechanismScramSHA512, Type: 2, newHash: sha512.New, MinIterations: 4096}
)

// MaxScramIterations is the most iterations Kafka accepts for a credential.
const MaxScramIterations = 16384

// ScramMechanisms lists the SCRAM mechanisms by type.
var ScramMechanisms = []ScramMechanism{ScramSHA256, ScramSHA512}

// ScramMechanismByName finds a SCRAM mechanism by its SASL name.
func ScramMechanismByName(name string) (ScramMechanism, bool) {
	for _, m := range ScramMechanisms {
		if m.Name == name {
			return m, true
		}
	}
	return ScramMechanism{}, false
}

// ScramMechanismByType finds a SCRAM mechanism by its protocol id.
func ScramMechanismByType(t int8) (ScramMechanism, bool) {
	for _, m := range ScramMechanisms {
		if m.Type == t {
			return m, true
		}
	}
	return ScramMechanism{}, false
}

// ScramCredential is what the server keeps of a SCRAM password: never
// the password, only what verifies a client's proof and signs the answer.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

func (m ScramMechanism) hmac(key []byte, msg string) []byte {
	h := hmac.New(m.newHash, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

func (m ScramMechanism) hash(b []byte) []byte {
	h := m.newHash()
	h.Write(b)
	return h.Sum(nil)
}

// SaltedPassword is RFC 5802's Hi(password, salt, iterations).
func (m ScramMechanism) SaltedPassword(password string, salt []byte, iterations int32) ([]byte, error) {
	key, err := pbkdf2.Key(m.newHash, password, salt, int(iterations), m.newHash().Size())
	if err != nil {
		return nil, fmt.Errorf("auth: %s salted password: %w", m.Name, err)
	}
	return key, nil
}

// CredentialFromSalted derives the stored and server keys from a salted
// password, as AlterUserScramCredentials sends it.
func (m ScramMechanism) CredentialFromSalted(salted, salt []byte, iterations int32) ScramCredential {
	clientKey := m.hmac(salted, "Client Key")
	return ScramCredential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  m.hash(clientKey),
		ServerKey:  m.hmac(salted, "Server Key"),
		Iterations: iterations,
	}
}

// NewCredential derives the credential of a password.
func (m ScramMechanism) NewCredential(password string, salt []byte, iterations int32) (ScramCredential, error) {
	salted, err := m.SaltedPassword(password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	return m.CredentialFromSalted(salted, salt, iterations), nil
}

// FormatScramCredential writes a credential as Kafka stores it in a
// user's config (ScramCredentialUtils.credentialToString):
//
//	salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>
func FormatScramCredential(c ScramCredential) string {
	enc := base64.StdEncoding.EncodeToString
	return "salt=" + enc(c.Salt) + ",stored_key=" + enc(c.StoredKey) + ",server_key=" + enc(c.ServerKey) +
		",iterations=" + strconv.Itoa(int(c.Iterations))
}

// ParseScramCredential reads Kafka's stored form of a credential; all four
// fields are required, as ScramCredentialUtils.credentialFromString needs.
func ParseScramCredential(s string) (ScramCredential, error) {
	fields := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return ScramCredential{}, fmt.Errorf("auth: SCRAM credential: %q is not key=value", kv)
		}
		fields[k] = v
	}
	var c ScramCredential
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{"salt", &c.Salt}, {"stored_key", &c.StoredKey}, {"server_key", &c.ServerKey}} {
		v, ok := fields[f.name]
		if !ok {
			return ScramCredential{}, fmt.Errorf("auth: SCRAM credential has no %s", f.name)
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return ScramCredential{}, fmt.Errorf("auth: SCRAM credential %s: %w", f.name, err)
		}
		*f.dst = b
	}
	it, ok := fields["iterations"]
	if !ok {
		return ScramCredential{}, fmt.Errorf("auth: SCRAM credential has no iterations")
	}
	n, err := strconv.ParseInt(it, 10, 32)
	if err != nil {
		return ScramCredential{}, fmt.Errorf("auth: SCRAM credential iterations: %w", err)
	}
	c.Iterations = int32(n)
	return c, nil
}
