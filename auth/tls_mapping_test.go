package auth

import (
	"errors"
	"testing"
)

// The cases are Kafka's SslPrincipalMapperTest.
func TestPrincipalMappingRules(t *testing.T) {
	for _, c := range []struct {
		rules, dn, want string
	}{
		{"DEFAULT", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "CN=Duke,OU=ServiceUsers,O=Org,C=US"},
		{"", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "CN=Duke,OU=ServiceUsers,O=Org,C=US"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=Duke,OU=ServiceUsers,O=Org,C=US", "Duke"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=Duke,OU=Other,O=Org,C=US", "CN=Duke,OU=Other,O=Org,C=US"},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L", "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "duke@javasoft"},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U", "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Santa Clara,ST=CA,C=US", "DUKE@JAVASOFT"},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT", "CN=Duke,OU=ServiceUsers,O=Org", "duke"},
		{"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L", "OU=JavaSoft,O=Sun Microsystems,C=US,CN=Duke", "duke"},
		// Escaped commas and slashes inside a rule.
		{`RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/,DEFAULT`, "CN=kaf,OU=x", "kaf"},
		{`RULE:^CN=(.*?)\/(.*?),.*$/$1\/$2/`, "CN=a/b,O=c", "a/b"},
		{"RULE:^CN=(.*),OU=(.*)$/$1\\,$2/", "CN=x,OU=y", "x,y"},
		// A back reference past the groups is literal text.
		{"RULE:^CN=(.*?),.*$/$1$2/", "CN=x,O=y", "x$2"},
		{"RULE:^CN=(.*?),.*$/$12/", "CN=x,O=y", "x2"},
		// A multi-line set of rules, as written in a properties file.
		{"RULE:^CN=(.*?),O=b$/$1/,\n  RULE:^CN=(.*?),O=c$/$1-c/U", "CN=z,O=c", "Z-C"},
	} {
		m, err := ParsePrincipalMappingRules(c.rules)
		if err != nil {
			t.Errorf("parse %q: %v", c.rules, err)
			continue
		}
		got, err := m.Name(c.dn)
		if err != nil || got != c.want {
			t.Errorf("rules %q on %q: %q, %v; want %q", c.rules, c.dn, got, err, c.want)
		}
	}
}

func TestPrincipalMappingInvalidRules(t *testing.T) {
	for _, rules := range []string{
		"DEFAULTS",
		"DEFAUL",
		"DEFAULT/L",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1/L/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/L",
		"RULE:CN=(.*?),OU=ServiceUsers.*/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/LU",
		"RULE:((/$1/",
	} {
		if _, err := ParsePrincipalMappingRules(rules); err == nil {
			t.Errorf("rules %q parsed", rules)
		}
	}
}

func TestPrincipalMappingNoMatch(t *testing.T) {
	m, err := ParsePrincipalMappingRules("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Name("CN=Duke,OU=Other"); !errors.Is(err, ErrNoMatchingRule) {
		t.Fatalf("err %v, want ErrNoMatchingRule", err)
	}
}

func FuzzPrincipalMappingRules(f *testing.F) {
	f.Add("RULE:^CN=(.*?),OU=(.*?)$/$1@$2/L,DEFAULT", "CN=a,OU=b")
	f.Add(`RULE:^CN=(.*?)\/x$/$1\/$9${n}/U`, "CN=a/x")
	f.Add("DEFAULT", "")
	f.Fuzz(func(t *testing.T, rules, dn string) {
		m, err := ParsePrincipalMappingRules(rules)
		if err != nil {
			return
		}
		m.Name(dn)
	})
}
