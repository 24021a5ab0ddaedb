package auth

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
)

func TestDistinguishedNameAsJava(t *testing.T) {
	ca := testutil.NewCA(t)
	email := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	for _, c := range []struct {
		subject pkix.Name
		want    string
	}{
		{pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Brook"}, Country: []string{"US"}},
			"CN=alice,OU=eng,O=Brook,C=US"},
		{pkix.Name{CommonName: "a,b+c=d", Locality: []string{"#x"}, Province: []string{"S;t"}},
			`CN=a\,b\+c\=d,L=\#x,ST=S\;t`},
		{pkix.Name{CommonName: " padded "}, `CN=\ padded\ `},
		{pkix.Name{CommonName: `q"<>\`}, `CN=q\"\<\>\\`},
		// Go writes the subject in its own order (serial number last);
		// Java prints the last RDN first.
		// Java has no RFC 2253 keyword for emailAddress or serialNumber:
		// the OID and the DER value in hex.
		{pkix.Name{CommonName: "bob", ExtraNames: []pkix.AttributeTypeAndValue{{Type: email, Value: "a@b"}}},
			"1.2.840.113549.1.9.1=#0c03614062,CN=bob"},
		{pkix.Name{SerialNumber: "7", CommonName: "x"}, "2.5.4.5=#130137,CN=x"},
	} {
		leaf := ca.Issue(c.subject)
		got, err := DistinguishedName(leaf.Cert.RawSubject)
		if err != nil || got != c.want {
			t.Errorf("%v: %q, %v; want %q", c.subject, got, err, c.want)
		}
	}
}

func TestDistinguishedNameMultiValuedRDN(t *testing.T) {
	rdns := pkix.RDNSequence{
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 6}, Value: "US"}},
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "a"}, {Type: asn1.ObjectIdentifier{2, 5, 4, 11}, Value: "b"}},
	}
	der, err := asn1.Marshal(rdns)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DistinguishedName(der)
	if want := "CN=a+OU=b,C=US"; err != nil || got != want {
		t.Fatalf("%q, %v; want %q", got, err, want)
	}
}

func FuzzDistinguishedName(f *testing.F) {
	der, _ := asn1.Marshal(pkix.Name{CommonName: "a", Country: []string{"US"}}.ToRDNSequence())
	f.Add(der)
	f.Fuzz(func(t *testing.T, b []byte) {
		DistinguishedName(b)
	})
}
