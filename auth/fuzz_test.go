package auth

import (
	"bytes"
	"testing"
	"time"
)

// The decoders of client input and of stored credentials never panic;
// what they accept re-encodes to itself where a form is canonical.

func FuzzParseJAAS(f *testing.F) {
	for _, s := range []string{"", "M required;", `M required a="b" c=d;`, `M optional a="\"";N required;`, "/*", "\"", strings256()} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		entries, err := ParseJAAS(s)
		if err == nil && len(entries) == 0 {
			t.Fatal("no entries and no error")
		}
	})
}

func FuzzParseScramCredential(f *testing.F) {
	c, _ := ScramSHA256.NewCredential("pw", []byte("salt"), 4096)
	for _, s := range []string{"", FormatScramCredential(c), FormatScramCredential(c) + ",x=y", "salt=,stored_key=,server_key=,iterations=0", "==,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseScramCredential(s)
		if err != nil {
			return
		}
		back, err := ParseScramCredential(FormatScramCredential(c))
		if err != nil || !bytes.Equal(back.Salt, c.Salt) || back.Iterations != c.Iterations {
			t.Fatalf("round trip of %q: %v", s, err)
		}
	})
}

// FuzzScramServer feeds arbitrary first and final messages to a SCRAM
// server: no panic, and never success without the password.
func FuzzScramServer(f *testing.F) {
	cred, _ := ScramSHA512.NewCredential("secret", []byte("salt"), 4096)
	lookup := func(string) (ScramCredential, bool, error) { return cred, true, nil }
	for _, s := range [][2]string{{"", ""}, {"n,,n=alice,r=abc", "c=biws,r=abc,p=AAAA"}, {"n,a=x,n=x,r=a,ext=1", "c=,p="}, {"n,,n==2C=3D,r=!", ",p=,p="}, {"n,,n=a=,r=x", "c=biws,r=x"}} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := NewScramServer(ScramSHA512, lookup, bytes.NewReader(bytes.Repeat([]byte{7}, 64)))
		if _, _, err := s.Step(first); err != nil {
			return
		}
		if _, done, err := s.Step(final); done || err == nil {
			t.Fatalf("final %q accepted", final)
		}
	})
}

func FuzzPlainServer(f *testing.F) {
	for _, s := range []string{"", "\x00a\x00b", "a\x00b\x00c\x00d", "\x00\x00", "\xff\x00\xfe\x00\xfd"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		_, done, err := NewPlainServer(PlainUsers{"alice": "secret"}).Step(in)
		if done != (err == nil) {
			t.Fatalf("done=%v err=%v", done, err)
		}
		if done && !bytes.Contains(in, []byte("\x00alice\x00secret")) {
			t.Fatalf("%q accepted", in)
		}
	})
}

func FuzzOAuthBearerServer(f *testing.F) {
	v := &UnsecuredValidator{PrincipalClaimName: "sub", ScopeClaimName: "scope", Now: func() time.Time { return time.Unix(1_700_000_000, 0) }}
	good := unsecuredToken(`{"sub":"alice","exp":1700000600}`)
	for _, s := range []string{"", "n,,\x01auth=Bearer " + good + "\x01\x01", "n,a=x,\x01auth=Bearer a.b.\x01k=v\x01\x01", "\x01", "n,,\x01auth=Bearer ..\x01\x01"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := NewOAuthBearerServer(v)
		if _, _, err := s.Step(in); err != nil {
			return
		}
		s.Step([]byte{1})
	})
}

func FuzzParseUnsecuredJWS(f *testing.F) {
	for _, s := range []string{"", "..", unsecuredToken(`{"sub":"a","exp":1}`), unsecuredToken(`{"exp":1e400}`), unsecuredToken(`[]`), unsecuredToken(`null`)} {
		f.Add(s)
	}
	v := &UnsecuredValidator{PrincipalClaimName: "sub", ScopeClaimName: "scope", RequiredScope: []string{"x"}, Now: time.Now}
	f.Fuzz(func(t *testing.T, s string) {
		ParseUnsecuredJWS(s)
		v.Validate(s)
	})
}

func strings256() string { return string(bytes.Repeat([]byte("M required a=b;"), 20)) }
