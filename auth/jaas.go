package auth

import (
	"fmt"
	"strings"
)

// JAASEntry is one login module of a JAAS configuration line, as Kafka's
// sasl.jaas.config holds it:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="secret";
type JAASEntry struct {
	LoginModule string
	Flag        string // required, requisite, sufficient or optional
	Options     map[string]string
}

// Login modules Kafka names for each mechanism.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// maxJAASLength bounds a JAAS line; Kafka has no limit but a config value
// this long is a mistake, and parsing stays linear anyway.
const maxJAASLength = 1 << 20

// ParseJAAS parses a JAAS configuration line as Kafka's JaasConfig does:
// one or more "LoginModule flag key=value ... ;" entries, values quoted
// with " (backslash escapes) or bare words, // and /* */ comments allowed.
func ParseJAAS(s string) ([]JAASEntry, error) {
	if len(s) > maxJAASLength {
		return nil, fmt.Errorf("auth: JAAS config of %d bytes is longer than %d", len(s), maxJAASLength)
	}
	t := &jaasTokenizer{s: s}
	var out []JAASEntry
	for {
		tok, err := t.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			break
		}
		if tok.kind != tokWord {
			return nil, fmt.Errorf("auth: JAAS config: expected a login module name, found %q", tok.text)
		}
		e := JAASEntry{LoginModule: tok.text, Options: map[string]string{}}
		flag, err := t.next()
		if err != nil {
			return nil, err
		}
		switch f := strings.ToLower(flag.text); {
		case flag.kind == tokWord && (f == "required" || f == "requisite" || f == "sufficient" || f == "optional"):
			e.Flag = f
		default:
			return nil, fmt.Errorf("auth: JAAS config: invalid control flag %q of %s", flag.text, e.LoginModule)
		}
		for {
			key, err := t.next()
			if err != nil {
				return nil, err
			}
			if key.kind == tokSemicolon {
				break
			}
			if key.kind != tokWord {
				return nil, fmt.Errorf("auth: JAAS config: expected an option or ';' in %s, found %q", e.LoginModule, key.text)
			}
			if eq, err := t.next(); err != nil {
				return nil, err
			} else if eq.kind != tokEquals {
				return nil, fmt.Errorf("auth: JAAS config: option %s of %s has no value", key.text, e.LoginModule)
			}
			val, err := t.next()
			if err != nil {
				return nil, err
			}
			if val.kind != tokWord && val.kind != tokQuoted {
				return nil, fmt.Errorf("auth: JAAS config: option %s of %s has no value", key.text, e.LoginModule)
			}
			e.Options[key.text] = val.text
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("auth: JAAS config has no login module")
	}
	return out, nil
}

type tokenKind int

const (
	tokEOF tokenKind = iota
	tokWord
	tokQuoted
	tokEquals
	tokSemicolon
)

type jaasToken struct {
	kind tokenKind
	text string
}

type jaasTokenizer struct {
	s   string
	pos int
}

func (t *jaasTokenizer) next() (jaasToken, error) {
	for t.pos < len(t.s) {
		c := t.s[t.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			t.pos++
		case strings.HasPrefix(t.s[t.pos:], "//"):
			if i := strings.IndexByte(t.s[t.pos:], '\n'); i >= 0 {
				t.pos += i + 1
			} else {
				t.pos = len(t.s)
			}
		case strings.HasPrefix(t.s[t.pos:], "/*"):
			i := strings.Index(t.s[t.pos+2:], "*/")
			if i < 0 {
				return jaasToken{}, fmt.Errorf("auth: JAAS config: unterminated comment")
			}
			t.pos += 2 + i + 2
		case c == '=':
			t.pos++
			return jaasToken{tokEquals, "="}, nil
		case c == ';':
			t.pos++
			return jaasToken{tokSemicolon, ";"}, nil
		case c == '"':
			return t.quoted()
		default:
			start := t.pos
			for t.pos < len(t.s) && !strings.ContainsRune(" \t\n\r=;\"", rune(t.s[t.pos])) {
				t.pos++
			}
			return jaasToken{tokWord, t.s[start:t.pos]}, nil
		}
	}
	return jaasToken{kind: tokEOF}, nil
}

// quoted reads a "..." value with Java StreamTokenizer's escapes.
func (t *jaasTokenizer) quoted() (jaasToken, error) {
	t.pos++ // opening quote
	var b strings.Builder
	for t.pos < len(t.s) {
		c := t.s[t.pos]
		t.pos++
		switch c {
		case '"':
			return jaasToken{tokQuoted, b.String()}, nil
		case '\\':
			if t.pos >= len(t.s) {
				return jaasToken{}, fmt.Errorf("auth: JAAS config: unterminated quoted value")
			}
			e := t.s[t.pos]
			t.pos++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return jaasToken{}, fmt.Errorf("auth: JAAS config: unterminated quoted value")
}

// JAASFor returns the options of the entry for loginModule, as Kafka's
// login for a mechanism takes the entry of its module; false if none.
func JAASFor(entries []JAASEntry, loginModule string) (map[string]string, bool) {
	for _, e := range entries {
		if e.LoginModule == loginModule {
			return e.Options, true
		}
	}
	return nil, false
}
