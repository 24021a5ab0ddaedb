package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"equals", "a=b\n", map[string]string{"a": "b"}},
		{"colon", "a:b", map[string]string{"a": "b"}},
		{"whitespace separator", "a b", map[string]string{"a": "b"}},
		{"spaces around equals", "a  =  b", map[string]string{"a": "b"}},
		{"whitespace then colon", "a \t: b", map[string]string{"a": "b"}},
		{"only first separator counts", "a=b=c:d", map[string]string{"a": "b=c:d"}},
		{"second equals after whitespace separator", "a = = b", map[string]string{"a": "= b"}},
		{"trailing whitespace kept", "a=b  ", map[string]string{"a": "b  "}},
		{"leading whitespace trimmed", "   \t\fa=b", map[string]string{"a": "b"}},
		{"key without value", "a", map[string]string{"a": ""}},
		{"key with empty value", "a=", map[string]string{"a": ""}},
		{"hash comment", "# a=b\nc=d", map[string]string{"c": "d"}},
		{"bang comment", "  ! a=b\nc=d", map[string]string{"c": "d"}},
		{"hash inside value", "a=b#c", map[string]string{"a": "b#c"}},
		{"blank lines", "\n\n   \na=b\n\n", map[string]string{"a": "b"}},
		{"CRLF", "a=b\r\nc=d\r\n", map[string]string{"a": "b", "c": "d"}},
		{"CR only", "a=b\rc=d", map[string]string{"a": "b", "c": "d"}},
		{"continuation", "a=b\\\n   c", map[string]string{"a": "bc"}},
		{"continuation keeps value spaces", "a=b \\\n  c", map[string]string{"a": "b c"}},
		{"multi continuation", "a=1,\\\n 2,\\\n 3", map[string]string{"a": "1,2,3"}},
		{"continued line that looks like a comment", "a=b\\\n#c", map[string]string{"a": "b#c"}},
		{"even backslashes do not continue", "a=b\\\\\nc=d", map[string]string{"a": `b\`, "c": "d"}},
		{"continuation then empty line ends", "a=b\\\n\nc=d", map[string]string{"a": "b", "c": "d"}},
		{"continuation at EOF", "a=b\\", map[string]string{"a": "b"}},
		{"continuation in key", "ke\\\n  y=v", map[string]string{"key": "v"}},
		{"comment does not continue", "# x\\\na=b", map[string]string{"a": "b"}},
		{"escapes", `a=x\ty\nz\rw\fv`, map[string]string{"a": "x\ty\nz\rw\fv"}},
		{"escaped other char", `a=\q\\\=`, map[string]string{"a": `q\=`}},
		{"escaped separator in key", `a\=b\:c\ d=e`, map[string]string{"a=b:c d": "e"}},
		{"unicode escape", `a=caf\u00e9`, map[string]string{"a": "café"}},
		{"unicode escape upper hex", `a=\u00E9`, map[string]string{"a": "é"}},
		{"surrogate pair", `a=\uD83D\uDE00!`, map[string]string{"a": "😀!"}},
		{"utf8 literal", "a=café", map[string]string{"a": "café"}},
		{"duplicate key last wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"server.properties style", "broker.id=0\nlisteners=PLAINTEXT://:9092\nlog.dirs=/tmp/kafka-logs\n",
			map[string]string{"broker.id": "0", "listeners": "PLAINTEXT://:9092", "log.dirs": "/tmp/kafka-logs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProperties(strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("ParseProperties(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseProperties(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParsePropertiesMalformedUnicode(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\uzzzz`, `a=\u12g4`, `k\u1=v`} {
		_, err := ParseProperties(strings.NewReader(in))
		if !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseProperties(%q) error = %v, want ErrSyntax", in, err)
		}
	}
}
