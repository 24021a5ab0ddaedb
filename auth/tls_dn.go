package auth

import (
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf16"
)

// The attribute keywords Java's X500Principal.getName() (RFC 2253 form)
// prints; every other attribute prints as its OID with the value as #hex.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// attributeSET is one relative distinguished name: a SET OF attribute
// type and value, the value kept raw so that it can be printed as Java
// prints values it has no keyword or string form for.
type attributeSET []struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// DistinguishedName formats a certificate's DER-encoded subject (or
// issuer) as Java's X500Principal.getName() does, which is Kafka's
// default principal name for a client certificate: RFC 2253, the last
// RDN first, multi-valued RDNs joined by '+'.
func DistinguishedName(rawSubject []byte) (string, error) {
	var rdns []attributeSET
	rest, err := asn1.Unmarshal(rawSubject, &rdns)
	if err != nil {
		return "", fmt.Errorf("parse distinguished name: %w", err)
	}
	if len(rest) > 0 {
		return "", fmt.Errorf("parse distinguished name: %d trailing bytes", len(rest))
	}
	var b strings.Builder
	for i := len(rdns) - 1; i >= 0; i-- {
		if i != len(rdns)-1 {
			b.WriteByte(',')
		}
		for j, ava := range rdns[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			oid := ava.Type.String()
			kw, known := rfc2253Keywords[oid]
			s, isString := derString(ava.Value)
			if !known || !isString {
				b.WriteString(oid)
				b.WriteString("=#")
				b.WriteString(hex.EncodeToString(ava.Value.FullBytes))
				continue
			}
			b.WriteString(kw)
			b.WriteByte('=')
			b.WriteString(escapeRFC2253(s))
		}
	}
	return b.String(), nil
}

// derString decodes the string types Java prints as text.
func derString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String:
		return string(v.Bytes), true
	case asn1.TagT61String, asn1.TagGeneralString:
		// Java reads both as ISO-8859-1.
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
		}
		return string(r), true
	case asn1.TagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	case 28: // UniversalString, UCS-4
		if len(v.Bytes)%4 != 0 {
			return "", false
		}
		r := make([]rune, len(v.Bytes)/4)
		for i := range r {
			b := v.Bytes[4*i:]
			r[i] = rune(uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]))
		}
		return string(r), true
	}
	return "", false
}

// escapeRFC2253 escapes a value as Java's AVA.toRFC2253String: a
// backslash before each of ,=+<>#;"\ anywhere, NUL as \00, and before
// each leading or trailing space or carriage return.
func escapeRFC2253(s string) string {
	const escapees = ",=+<>#;\"\\"
	var first []rune
	for _, c := range s {
		switch {
		case strings.ContainsRune(escapees, c):
			first = append(first, '\\', c)
		case c == 0:
			first = append(first, '\\', '0', '0')
		default:
			first = append(first, c)
		}
	}
	lead := 0
	for lead < len(first) && (first[lead] == ' ' || first[lead] == '\r') {
		lead++
	}
	trail := len(first) - 1
	for trail >= 0 && (first[trail] == ' ' || first[trail] == '\r') {
		trail--
	}
	var b strings.Builder
	for i, c := range first {
		if i < lead || i > trail {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
