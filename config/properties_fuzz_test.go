package config

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// escapeProperty writes s the way java.util.Properties.store does (with
// random choices where store has freedom), so that parsing must give s
// back.
func escapeProperty(rng *rand.Rand, s string, isKey bool) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == ' ' && (isKey || i == 0):
			b.WriteString(`\ `)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\f':
			b.WriteString(`\f`)
		case strings.ContainsRune(`=:#!\`, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r > 0x7e || rng.Intn(8) == 0:
			for _, u := range utf16Units(r) {
				fmt.Fprintf(&b, `\u%04X`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func utf16Units(r rune) []uint16 {
	if r < 0x10000 {
		return []uint16{uint16(r)}
	}
	r -= 0x10000
	return []uint16{uint16(0xD800 + (r >> 10)), uint16(0xDC00 + (r & 0x3FF))}
}

func randomText(rng *rand.Rand, n int) string {
	alphabet := []rune("ab.Z09 \t\n\r\f=:#!\\é€😀_-/")
	var b strings.Builder
	for range n {
		b.WriteRune(alphabet[rng.Intn(len(alphabet))])
	}
	return b.String()
}

// Property: any map written in store syntax, with random separators,
// indentation, comments and continuations, parses back unchanged.
func TestParsePropertiesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	seps := []string{"=", ":", " ", " = ", "\t:\t", "  "}
	for iter := 0; iter < 2000; iter++ {
		want := map[string]string{}
		var file strings.Builder
		for range rng.Intn(6) {
			k := randomText(rng, 1+rng.Intn(8))
			v := randomText(rng, rng.Intn(10))
			want[k] = v
			if rng.Intn(3) == 0 {
				file.WriteString([]string{"# comment\n", "! a=b\n", "\n", "   \t\n"}[rng.Intn(4)])
			}
			file.WriteString(strings.Repeat(" ", rng.Intn(3)))
			line := escapeProperty(rng, k, true) + seps[rng.Intn(len(seps))] + escapeProperty(rng, v, false)
			if rng.Intn(3) == 0 && len(line) > 2 {
				// Break the line with a continuation where no escape is
				// split and no significant whitespace follows (the next
				// line's indentation is dropped).
				cut := 1 + rng.Intn(len(line)-1)
				if oddTrailingBackslashes(line[:cut]+`\`) && utf8.ValidString(line[:cut]) && !isPropSpace(line[cut]) {
					line = line[:cut] + "\\\n" + strings.Repeat(" ", 1+rng.Intn(3)) + line[cut:]
				}
			}
			file.WriteString(line)
			file.WriteString([]string{"\n", "\r\n", "\r"}[rng.Intn(3)])
		}
		got, err := ParseProperties(strings.NewReader(file.String()))
		if err != nil {
			t.Fatalf("parse %q: %v", file.String(), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parse %q\n got %q\nwant %q", file.String(), got, want)
		}
	}
}

func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{"", "a=b", "a\\\n b", `a=\u00e9`, `\u12`, "#x\n!y\n k : v \\", "\\", "=\n:\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseProperties(strings.NewReader(s))
		if err != nil {
			return
		}
		// Parsing is deterministic, and every key/value is valid UTF-8
		// when the input is.
		m2, _ := ParseProperties(strings.NewReader(s))
		if !reflect.DeepEqual(m, m2) {
			t.Fatal("nondeterministic")
		}
		if utf8.ValidString(s) {
			for k, v := range m {
				if !utf8.ValidString(k) || !utf8.ValidString(v) {
					t.Fatalf("invalid UTF-8 out of valid input: %q=%q", k, v)
				}
			}
		}
	})
}
