package auth

import (
	"bytes"
	"crypto/subtle"
	"time"
)

// PlainUsers checks a PLAIN user's password. Kafka's default
// (PlainServerCallbackHandler) takes the user_<name>="<password>" options
// of the PlainLoginModule entry of the listener's JAAS config.
type PlainUsers map[string]string

// PlainUsersFromJAAS reads the user_<name> options of PlainLoginModule.
func PlainUsersFromJAAS(entries []JAASEntry) PlainUsers {
	opts, _ := JAASFor(entries, PlainLoginModule)
	users := PlainUsers{}
	for k, v := range opts {
		if name, ok := cutPrefix(k, "user_"); ok {
			users[name] = v
		}
	}
	return users
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || s[:len(prefix)] != prefix {
		return "", false
	}
	return s[len(prefix):], true
}

// plainServer is SASL/PLAIN (RFC 4616): one message,
// [authzid] NUL authcid NUL passwd, and an empty answer.
type plainServer struct {
	users     PlainUsers
	done      bool
	principal Principal
}

// NewPlainServer starts a PLAIN exchange against users.
func NewPlainServer(users PlainUsers) Server { return &plainServer{users: users} }

func (s *plainServer) Step(in []byte) ([]byte, bool, error) {
	if s.done {
		return nil, false, ErrUnexpectedToken
	}
	authzid, username, password := splitPlain(in)
	if username == "" {
		return nil, false, privateFailure("Authentication failed: username not specified")
	}
	if password == "" {
		return nil, false, privateFailure("Authentication failed: password not specified")
	}
	want, ok := s.users[username]
	// Compared in constant time so that the answer's timing says nothing
	// of the password; an unknown user compares against nothing.
	if subtle.ConstantTimeCompare([]byte(want), []byte(password)) != 1 || !ok {
		return nil, false, publicFailure("Authentication failed: Invalid username or password")
	}
	if authzid != "" && authzid != username {
		return nil, false, publicFailure("Authentication failed: Client requested an authorization id that is different from username")
	}
	s.done, s.principal = true, User(username)
	return []byte{}, true, nil
}

// splitPlain splits the message as Kafka's PlainSaslServer does: parts
// missing are empty (refused as a missing username or password), and
// whatever follows a third NUL is ignored.
func splitPlain(in []byte) (authzid, username, password string) {
	var p [3]string
	for i := range p {
		j := bytes.IndexByte(in, 0)
		if j < 0 {
			p[i] = string(in)
			break
		}
		p[i], in = string(in[:j]), in[j+1:]
	}
	return p[0], p[1], p[2]
}

func (s *plainServer) Principal() Principal { return s.principal }
func (s *plainServer) Expiry() time.Time    { return time.Time{} }
