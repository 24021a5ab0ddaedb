package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax marks a server.properties file that java.util.Properties would
// also refuse (a malformed \uXXXX escape).
var ErrSyntax = errors.New("config: properties syntax error")

// ParseProperties reads java.util.Properties text, the format of Kafka's
// server.properties: '#' and '!' comment lines, keys ending at the first
// unescaped '=', ':' or whitespace, backslash line continuation, and the
// escapes \t \n \r \f \uXXXX (any other escaped character stands for
// itself). A later duplicate key replaces an earlier one, as in Java.
//
// One deliberate difference: Kafka loads the file as ISO-8859-1, which
// garbles UTF-8 text; Brook reads it as UTF-8.
func ParseProperties(r io.Reader) (map[string]string, error) {
	data, err := io.ReadAll(bufio.NewReader(r))
	if err != nil {
		return nil, fmt.Errorf("read properties: %w", err)
	}
	lines := naturalLines(string(data))
	out := make(map[string]string)
	for i := 0; i < len(lines); {
		first := trimLeftSpace(lines[i])
		lineNo := i + 1
		i++
		if first == "" || first[0] == '#' || first[0] == '!' {
			continue
		}
		var logical strings.Builder
		segment := first
		for {
			if !oddTrailingBackslashes(segment) {
				logical.WriteString(segment)
				break
			}
			logical.WriteString(segment[:len(segment)-1])
			if i >= len(lines) {
				break
			}
			// A continuation line loses its leading whitespace, and an
			// empty one ends the logical line.
			segment = trimLeftSpace(lines[i])
			i++
			if segment == "" {
				break
			}
		}
		key, value, err := splitKeyValue(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		out[key] = value
	}
	return out, nil
}

// naturalLines splits at \n, \r or \r\n, the line terminators of
// java.util.Properties.
func naturalLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftSpace(s string) string {
	i := 0
	for i < len(s) && isPropSpace(s[i]) {
		i++
	}
	return s[i:]
}

func oddTrailingBackslashes(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func splitKeyValue(line string) (string, string, error) {
	keyEnd, valueStart := len(line), len(line)
	hasSep := false
	escaped := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if !escaped && (c == '=' || c == ':') {
			keyEnd, valueStart, hasSep = i, i+1, true
			break
		}
		if !escaped && isPropSpace(c) {
			keyEnd, valueStart = i, i+1
			break
		}
		escaped = c == '\\' && !escaped
	}
	for valueStart < len(line) {
		c := line[valueStart]
		if !isPropSpace(c) {
			if hasSep || (c != '=' && c != ':') {
				break
			}
			hasSep = true
		}
		valueStart++
	}
	key, err := unescapeProperty(line[:keyEnd])
	if err != nil {
		return "", "", err
	}
	value, err := unescapeProperty(line[valueStart:])
	if err != nil {
		return "", "", fmt.Errorf("key %s: %w", key, err)
	}
	return key, value, nil
}

// unescapeProperty resolves backslash escapes. \u escapes are UTF-16 code
// units, so a surrogate pair written as two escapes becomes one rune.
func unescapeProperty(s string) (string, error) {
	if !strings.ContainsRune(s, '\\') {
		return s, nil
	}
	var b strings.Builder
	var units []uint16
	flush := func() {
		for _, r := range utf16.Decode(units) {
			b.WriteRune(r)
		}
		units = units[:0]
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			flush()
			r, size := utf8.DecodeRuneInString(s[i:])
			b.WriteRune(r)
			i += size
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash vanishes, as in Java
		}
		c = s[i]
		if c == 'u' {
			if i+5 > len(s) {
				return "", fmt.Errorf("%w: malformed \\uxxxx encoding", ErrSyntax)
			}
			var u uint16
			for _, h := range []byte(s[i+1 : i+5]) {
				d, ok := hexDigit(h)
				if !ok {
					return "", fmt.Errorf("%w: malformed \\uxxxx encoding", ErrSyntax)
				}
				u = u<<4 | uint16(d)
			}
			units = append(units, u)
			i += 5
			continue
		}
		flush()
		switch c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			b.WriteRune(r)
			i += size
			continue
		}
		i++
	}
	flush()
	return b.String(), nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
