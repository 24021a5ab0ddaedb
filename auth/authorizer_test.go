package auth

import "testing"

func lit(t ResourceType, name string) Resource { return Resource{t, name, PatternLiteral} }
func pre(t ResourceType, name string) Resource { return Resource{t, name, PatternPrefixed} }

func allow(p, host string, op Operation) Entry { return Entry{p, host, op, PermAllow} }
func deny(p, host string, op Operation) Entry  { return Entry{p, host, op, PermDeny} }

func TestAuthorize(t *testing.T) {
	alice, bob := User("alice"), User("bob")
	type acl struct {
		r Resource
		e []Entry
	}
	cases := []struct {
		name       string
		acls       []acl
		super      []string
		allowNoACL bool
		p          Principal
		host       string
		op         Operation
		typ        ResourceType
		res        string
		want       bool
	}{
		{name: "no acl refuses", p: alice, op: OpRead, typ: ResourceTopic, res: "t", want: false},
		{name: "no acl allowed by allow.everyone", allowNoACL: true, p: alice, op: OpRead, typ: ResourceTopic, res: "t", want: true},
		{name: "allow.everyone only without any acl on the resource", allowNoACL: true,
			acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:bob", "*", OpRead)}}},
			p:    alice, op: OpRead, typ: ResourceTopic, res: "t", want: false},
		{name: "allow.everyone counts acls of other topics not", allowNoACL: true,
			acls: []acl{{lit(ResourceTopic, "u"), []Entry{allow("User:bob", "*", OpRead)}}},
			p:    alice, op: OpRead, typ: ResourceTopic, res: "t", want: true},
		{name: "literal allow", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpRead)}}},
			p: alice, op: OpRead, typ: ResourceTopic, res: "t", want: true},
		{name: "literal allow is for that principal", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpRead)}}},
			p: bob, op: OpRead, typ: ResourceTopic, res: "t", want: false},
		{name: "literal allow is for that operation", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpRead)}}},
			p: alice, op: OpWrite, typ: ResourceTopic, res: "t", want: false},
		{name: "literal allow is for that resource type", acls: []acl{{lit(ResourceGroup, "t"), []Entry{allow("User:alice", "*", OpRead)}}},
			p: alice, op: OpRead, typ: ResourceTopic, res: "t", want: false},
		{name: "host must match", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "10.0.0.1", OpRead)}}},
			p: alice, host: "10.0.0.2", op: OpRead, typ: ResourceTopic, res: "t", want: false},
		{name: "host matches", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "10.0.0.1", OpRead)}}},
			p: alice, host: "10.0.0.1", op: OpRead, typ: ResourceTopic, res: "t", want: true},
		{name: "wildcard principal", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:*", "*", OpRead)}}},
			p: bob, op: OpRead, typ: ResourceTopic, res: "t", want: true},
		{name: "wildcard resource", acls: []acl{{lit(ResourceTopic, "*"), []Entry{allow("User:bob", "*", OpWrite)}}},
			p: bob, op: OpWrite, typ: ResourceTopic, res: "anything", want: true},
		{name: "prefixed", acls: []acl{{pre(ResourceTopic, "app-"), []Entry{allow("User:bob", "*", OpWrite)}}},
			p: bob, op: OpWrite, typ: ResourceTopic, res: "app-1", want: true},
		{name: "prefixed is not a suffix", acls: []acl{{pre(ResourceTopic, "app-"), []Entry{allow("User:bob", "*", OpWrite)}}},
			p: bob, op: OpWrite, typ: ResourceTopic, res: "my-app-1", want: false},
		{name: "prefixed star is a literal prefix", acls: []acl{{pre(ResourceTopic, "*"), []Entry{allow("User:bob", "*", OpWrite)}}},
			p: bob, op: OpWrite, typ: ResourceTopic, res: "t", want: false},
		{name: "deny wins over allow", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpRead), deny("User:alice", "*", OpRead)}}},
			p: alice, op: OpRead, typ: ResourceTopic, res: "t", want: false},
		{name: "wildcard deny wins over literal allow", acls: []acl{
			{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpRead)}},
			{lit(ResourceTopic, "*"), []Entry{deny("User:*", "*", OpAll)}}},
			p: alice, op: OpRead, typ: ResourceTopic, res: "t", want: false},
		{name: "prefixed deny wins over literal allow", acls: []acl{
			{lit(ResourceTopic, "app-1"), []Entry{allow("User:alice", "*", OpRead)}},
			{pre(ResourceTopic, "app"), []Entry{deny("User:alice", "*", OpRead)}}},
			p: alice, op: OpRead, typ: ResourceTopic, res: "app-1", want: false},
		{name: "deny from one host only", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpRead), deny("User:alice", "10.0.0.9", OpRead)}}},
			p: alice, host: "10.0.0.1", op: OpRead, typ: ResourceTopic, res: "t", want: true},
		{name: "deny read does not deny describe", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpDescribe), deny("User:alice", "*", OpRead)}}},
			p: alice, op: OpDescribe, typ: ResourceTopic, res: "t", want: true},
		{name: "deny all denies describe", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpDescribe), deny("User:alice", "*", OpAll)}}},
			p: alice, op: OpDescribe, typ: ResourceTopic, res: "t", want: false},
		{name: "all allows write", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpAll)}}},
			p: alice, op: OpWrite, typ: ResourceTopic, res: "t", want: true},
		{name: "read implies describe", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpRead)}}},
			p: alice, op: OpDescribe, typ: ResourceTopic, res: "t", want: true},
		{name: "write implies describe", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpWrite)}}},
			p: alice, op: OpDescribe, typ: ResourceTopic, res: "t", want: true},
		{name: "delete implies describe", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpDelete)}}},
			p: alice, op: OpDescribe, typ: ResourceTopic, res: "t", want: true},
		{name: "alter implies describe", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpAlter)}}},
			p: alice, op: OpDescribe, typ: ResourceTopic, res: "t", want: true},
		{name: "create does not imply describe", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpCreate)}}},
			p: alice, op: OpDescribe, typ: ResourceTopic, res: "t", want: false},
		{name: "describe does not imply read", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpDescribe)}}},
			p: alice, op: OpRead, typ: ResourceTopic, res: "t", want: false},
		{name: "alter configs implies describe configs", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpAlterConfigs)}}},
			p: alice, op: OpDescribeConfigs, typ: ResourceTopic, res: "t", want: true},
		{name: "alter does not imply describe configs", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpAlter)}}},
			p: alice, op: OpDescribeConfigs, typ: ResourceTopic, res: "t", want: false},
		{name: "super user without acls", super: []string{"User:admin"}, p: User("admin"), op: OpAlter, typ: ResourceCluster, res: ClusterName, want: true},
		{name: "super user over deny", super: []string{"User:admin"},
			acls: []acl{{lit(ResourceCluster, ClusterName), []Entry{deny("User:*", "*", OpAll)}}},
			p:    User("admin"), op: OpAlter, typ: ResourceCluster, res: ClusterName, want: true},
		{name: "cluster action", acls: []acl{{lit(ResourceCluster, ClusterName), []Entry{allow("User:broker", "*", OpClusterAction)}}},
			p: User("broker"), op: OpClusterAction, typ: ResourceCluster, res: ClusterName, want: true},
		{name: "transactional id prefixed", acls: []acl{{pre(ResourceTransactionalID, "tx-"), []Entry{allow("User:alice", "*", OpWrite)}}},
			p: alice, op: OpWrite, typ: ResourceTransactionalID, res: "tx-9", want: true},
		{name: "delegation token", acls: []acl{{lit(ResourceDelegationToken, "tok"), []Entry{allow("User:alice", "*", OpDescribe)}}},
			p: alice, op: OpDescribe, typ: ResourceDelegationToken, res: "tok", want: true},
		{name: "other principal type does not match User:*", acls: []acl{{lit(ResourceTopic, "t"), []Entry{allow("User:*", "*", OpRead)}}},
			p: Principal{Type: "Group", Name: "x"}, op: OpRead, typ: ResourceTopic, res: "t", want: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := NewAuthorizer(c.super, c.allowNoACL)
			for _, x := range c.acls {
				a.SetResource(x.r, x.e)
			}
			host := c.host
			if host == "" {
				host = "127.0.0.1"
			}
			if got := a.Authorize(c.p, host, c.op, c.typ, c.res); got != c.want {
				t.Fatalf("Authorize(%v, %s, %v, %v:%s) = %v, want %v", c.p, host, c.op, c.typ, c.res, got, c.want)
			}
		})
	}
}

func TestAuthorizeAny(t *testing.T) {
	a := NewAuthorizer(nil, false)
	if a.AuthorizeAny(User("alice"), "h", OpWrite, ResourceTransactionalID) {
		t.Fatal("no acls: allowed")
	}
	a.SetResource(pre(ResourceTransactionalID, "tx"), []Entry{allow("User:alice", "*", OpWrite)})
	if !a.AuthorizeAny(User("alice"), "h", OpWrite, ResourceTransactionalID) {
		t.Fatal("prefixed allow: refused")
	}
	a.SetResource(lit(ResourceTransactionalID, "*"), []Entry{deny("User:alice", "*", OpWrite)})
	if a.AuthorizeAny(User("alice"), "h", OpWrite, ResourceTransactionalID) {
		t.Fatal("wildcard deny: allowed")
	}
}

func TestFilter(t *testing.T) {
	s := func(v string) *string { return &v }
	a := NewAuthorizer(nil, false)
	a.SetResource(lit(ResourceTopic, "t"), []Entry{allow("User:alice", "*", OpRead), deny("User:bob", "*", OpWrite)})
	a.SetResource(lit(ResourceTopic, "*"), []Entry{allow("User:carol", "*", OpRead)})
	a.SetResource(pre(ResourceTopic, "t"), []Entry{allow("User:dan", "*", OpRead)})
	a.SetResource(pre(ResourceTopic, "x"), []Entry{allow("User:erin", "*", OpRead)})
	a.SetResource(lit(ResourceGroup, "t"), []Entry{allow("User:alice", "*", OpRead)})
	cases := []struct {
		name string
		f    Filter
		want int
	}{
		{"everything", Filter{Type: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: PermAny}, 6},
		{"topics", Filter{Type: ResourceTopic, Pattern: PatternAny, Operation: OpAny, Permission: PermAny}, 5},
		{"literal t", Filter{Type: ResourceTopic, Name: s("t"), Pattern: PatternLiteral, Operation: OpAny, Permission: PermAny}, 2},
		{"prefixed any name", Filter{Type: ResourceTopic, Pattern: PatternPrefixed, Operation: OpAny, Permission: PermAny}, 2},
		{"any pattern named t", Filter{Type: ResourceTopic, Name: s("t"), Pattern: PatternAny, Operation: OpAny, Permission: PermAny}, 3},
		{"match t1", Filter{Type: ResourceTopic, Name: s("t1"), Pattern: PatternMatch, Operation: OpAny, Permission: PermAny}, 2},
		{"match t", Filter{Type: ResourceTopic, Name: s("t"), Pattern: PatternMatch, Operation: OpAny, Permission: PermAny}, 4},
		{"deny only", Filter{Type: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: PermDeny}, 1},
		{"principal", Filter{Type: ResourceAny, Pattern: PatternAny, Principal: s("User:alice"), Operation: OpAny, Permission: PermAny}, 2},
		{"operation", Filter{Type: ResourceAny, Pattern: PatternAny, Operation: OpWrite, Permission: PermAny}, 1},
		{"host", Filter{Type: ResourceAny, Pattern: PatternAny, Host: s("10.0.0.1"), Operation: OpAny, Permission: PermAny}, 0},
	}
	for _, c := range cases {
		if got := len(a.Matching(c.f)); got != c.want {
			t.Errorf("%s: %d bindings, want %d", c.name, got, c.want)
		}
	}
}

// BenchmarkAuthorize is one topic check (as each topic of a produce or
// fetch makes) on an authorizer holding 1,000 literal and 100 prefixed
// topic patterns of other principals besides the one that allows.
func BenchmarkAuthorize(b *testing.B) {
	a := NewAuthorizer(nil, false)
	for i := range 1000 {
		a.SetResource(lit(ResourceTopic, "topic-"+string(rune('a'+i%26))+string(rune('a'+i/26%26))), []Entry{allow("User:other", "*", OpRead)})
	}
	for i := range 100 {
		a.SetResource(pre(ResourceTopic, "team-"+string(rune('a'+i%26))+string(rune('a'+i/26))), []Entry{allow("User:other", "*", OpWrite)})
	}
	a.SetResource(pre(ResourceTopic, "orders."), []Entry{allow("User:alice", "*", OpWrite)})
	alice := User("alice")
	b.ReportAllocs()
	for b.Loop() {
		if !a.Authorize(alice, "10.0.0.1", OpWrite, ResourceTopic, "orders.eu") {
			b.Fatal("refused")
		}
	}
}
