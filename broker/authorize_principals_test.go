package broker

import (
	"context"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/internal/testutil"
)

// principalClient is a franz-go client whose requests go straight to one
// listener of the broker, so each response is the broker's answer to
// exactly that request on a connection authenticated as the client.
type principalClient struct {
	t  *testing.T
	cl *kgo.Client
}

func newPrincipalClient(t *testing.T, addr string, opts ...kgo.Opt) *principalClient {
	t.Helper()
	// Kafka 3.0's versions: Fetch by topic name (v12), which the rows use.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MaxVersions(kversion.V3_0_0()), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &principalClient{t, cl}
}

func (pc *principalClient) do(ctx context.Context, req kmsg.Request) kmsg.Response {
	pc.t.Helper()
	resp, err := pc.cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		pc.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

func (pc *principalClient) produce(ctx context.Context, topic string) int16 {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = stampedBatch(pc.t, 1, 1)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return pc.do(ctx, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

func (pc *principalClient) fetch(ctx context.Context, topic string) int16 {
	req := longPollFetch(topic, 0)
	req.MinBytes = 0
	return pc.do(ctx, req).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
}

// commit is a simple OffsetCommit (no generation) of partition 0.
func (pc *principalClient) commit(ctx context.Context, group, topic string) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return pc.do(ctx, req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// listed is the non-internal topics Metadata for all topics lists.
func (pc *principalClient) listed(ctx context.Context) []string {
	resp := pc.do(ctx, kmsg.NewPtrMetadataRequest()).(*kmsg.MetadataResponse)
	var names []string
	for _, tp := range resp.Topics {
		if !tp.IsInternal && tp.Topic != nil {
			names = append(names, *tp.Topic)
		}
	}
	slices.Sort(names)
	return names
}

// fromHost dials from a local address other than 127.0.0.1 (all of
// 127/8 is loopback on Linux), for host-restricted ACLs.
func fromHost(ip string) kgo.Opt {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return kgo.Dialer(d.DialContext)
}

// TestAuthorizeAuthenticatedPrincipals runs the authorizer on principals
// that real authentication produced, with no stand-in: SASL PLAIN and
// SCRAM-SHA-256 users on a SASL_PLAINTEXT listener, client certificates on
// an SSL listener (one mapped by ssl.principal.mapping.rules, one left to
// DEFAULT, the whole DN) and ANONYMOUS on PLAINTEXT. The ACLs are created
// through CreateAcls by the super user over SASL.
func TestAuthorizeAuthenticatedPrincipals(t *testing.T) {
	ca := testutil.NewCA(t)
	tb := sslBroker(t, ca, saslProps(map[string]string{
		"listeners":                   "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
		"sasl.enabled.mechanisms":     "PLAIN,SCRAM-SHA-256",
		"ssl.client.auth":             "required",
		"ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=apps,.*$/$1/L,DEFAULT",
		"authorizer.class.name":       "kafka.security.authorizer.AclAuthorizer",
		"super.users":                 "User:admin",
		"auto.create.topics.enable":   "false",
	}), nil)
	ctx := testContext(t)
	sslAddr := tb.b.Addrs()[2].String()
	saslClient := func(m sasl.Mechanism, opts ...kgo.Opt) *principalClient {
		return newPrincipalClient(t, tb.saslAddr(), append([]kgo.Opt{kgo.SASL(m)}, opts...)...)
	}
	certClient := func(subject pkix.Name) *principalClient {
		return newPrincipalClient(t, sslAddr, kgo.DialTLSConfig(tlsClientConfig(ca, ca.Issue(subject))))
	}

	admin := saslClient(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())
	adm := kadm.NewClient(admin.cl)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "carol", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "carol-secret"},
	})
	if err != nil || altered.Error() != nil {
		t.Fatalf("alter SCRAM: %v %v", err, altered.Error())
	}
	topics := []string{"a-1", "b", "c-deny", "dn-topic"}
	created, err := adm.CreateTopics(ctx, 1, 1, nil, topics...)
	if err != nil || created.Error() != nil {
		t.Fatalf("create topics as the super user: %v %v", err, created.Error())
	}

	const dn = "CN=dn,O=Brook,C=FR" // DEFAULT: the DN in Java's RFC 2253 form
	type acl struct {
		aclRule
		host string
	}
	acls := []acl{
		{aclRule{auth.ResourceTopic, auth.PatternPrefixed, "a-", "alice", auth.OpWrite, auth.PermAllow}, "*"},
		// Host-restricted: from 127.0.0.1 only.
		{aclRule{auth.ResourceTopic, auth.PatternPrefixed, "a-", "alice", auth.OpRead, auth.PermAllow}, "127.0.0.1"},
		// Another address: never alice's.
		{aclRule{auth.ResourceTopic, auth.PatternLiteral, "b", "alice", auth.OpRead, auth.PermAllow}, "192.0.2.7"},
		{aclRule{auth.ResourceTopic, auth.PatternLiteral, "b", "bob", auth.OpRead, auth.PermAllow}, "*"},
		{aclRule{auth.ResourceGroup, auth.PatternLiteral, "g", "bob", auth.OpRead, auth.PermAllow}, "*"},
		{aclRule{auth.ResourceTopic, auth.PatternLiteral, "*", "carol", auth.OpAll, auth.PermAllow}, "*"},
		{aclRule{auth.ResourceTopic, auth.PatternLiteral, "c-deny", "carol", auth.OpAll, auth.PermDeny}, "*"},
		{aclRule{auth.ResourceTopic, auth.PatternLiteral, "dn-topic", dn, auth.OpWrite, auth.PermAllow}, "*"},
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, a := range acls {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(a.typ), a.name, kmsg.ACLResourcePatternType(a.pat)
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:"+a.user, a.host, kmsg.ACLOperation(a.op), kmsg.ACLPermissionType(a.perm)
		req.Creations = append(req.Creations, c)
	}
	for i, r := range admin.do(ctx, req).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("create acl %d as the super user: code %d %v", i, r.ErrorCode, r.ErrorMessage)
		}
	}

	// FindCoordinator creates the offsets topic, whose partitions load
	// after: wait as the super user until group g's coordinator answers,
	// so that the rows see only authorization.
	testutil.Eventually(t, time.Minute, func() error {
		find := kmsg.NewPtrFindCoordinatorRequest()
		find.CoordinatorKey, find.CoordinatorKeys = "g", []string{"g"}
		admin.do(ctx, find)
		if code := admin.commit(ctx, "g", "b"); code != 0 {
			return fmt.Errorf("commit as the super user: %w", kerr.ErrorForCode(code))
		}
		return nil
	})

	alice := saslClient(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism())
	aliceElsewhere := saslClient(plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), fromHost("127.0.0.2"))
	carol := saslClient(scram.Auth{User: "carol", Pass: "carol-secret"}.AsSha256Mechanism())
	bob := certClient(pkix.Name{CommonName: "Bob", OrganizationalUnit: []string{"apps"}, Organization: []string{"Brook"}})
	dnUser := certClient(pkix.Name{CommonName: "dn", Organization: []string{"Brook"}, Country: []string{"FR"}})
	anonymous := newPrincipalClient(t, tb.addr)

	const (
		ok          = int16(0)
		topicFailed = int16(29) // TOPIC_AUTHORIZATION_FAILED
		groupFailed = int16(30) // GROUP_AUTHORIZATION_FAILED
	)
	type row struct {
		who  string
		pc   *principalClient
		call func(context.Context, *principalClient) int16
		what string
		want int16
	}
	produce := func(topic string) func(context.Context, *principalClient) int16 {
		return func(ctx context.Context, pc *principalClient) int16 { return pc.produce(ctx, topic) }
	}
	fetch := func(topic string) func(context.Context, *principalClient) int16 {
		return func(ctx context.Context, pc *principalClient) int16 { return pc.fetch(ctx, topic) }
	}
	commit := func(group, topic string) func(context.Context, *principalClient) int16 {
		return func(ctx context.Context, pc *principalClient) int16 { return pc.commit(ctx, group, topic) }
	}
	rows := []row{
		{"alice", alice, produce("a-1"), "produce a-1 (prefixed WRITE)", ok},
		{"alice", alice, produce("b"), "produce b", topicFailed},
		{"alice", alice, fetch("a-1"), "fetch a-1 (READ from 127.0.0.1)", ok},
		{"alice", alice, fetch("b"), "fetch b (READ only from 192.0.2.7)", topicFailed},
		{"alice", alice, commit("g", "a-1"), "commit g", groupFailed},
		{"alice@127.0.0.2", aliceElsewhere, produce("a-1"), "produce a-1 (any host)", ok},
		{"alice@127.0.0.2", aliceElsewhere, fetch("a-1"), "fetch a-1 (READ from 127.0.0.1 only)", topicFailed},
		{"bob", bob, fetch("b"), "fetch b (literal READ)", ok},
		{"bob", bob, produce("b"), "produce b", topicFailed},
		{"bob", bob, fetch("a-1"), "fetch a-1", topicFailed},
		{"bob", bob, commit("g", "b"), "commit g/b", ok},
		{"bob", bob, commit("g", "a-1"), "commit g/a-1", topicFailed},
		{"bob", bob, commit("h", "b"), "commit h/b", groupFailed},
		{"carol", carol, produce("b"), "produce b (wildcard ALL)", ok},
		{"carol", carol, fetch("a-1"), "fetch a-1 (wildcard ALL)", ok},
		{"carol", carol, produce("c-deny"), "produce c-deny (DENY over the wildcard)", topicFailed},
		{"carol", carol, fetch("c-deny"), "fetch c-deny (DENY over the wildcard)", topicFailed},
		{"carol", carol, commit("g", "b"), "commit g", groupFailed},
		{dn, dnUser, produce("dn-topic"), "produce dn-topic (ACL on the DN)", ok},
		{dn, dnUser, fetch("dn-topic"), "fetch dn-topic (WRITE only)", topicFailed},
		{dn, dnUser, produce("b"), "produce b", topicFailed},
		{"ANONYMOUS", anonymous, produce("a-1"), "produce a-1", topicFailed},
		{"ANONYMOUS", anonymous, fetch("b"), "fetch b", topicFailed},
		{"admin", admin, produce("c-deny"), "produce c-deny (super user)", ok},
	}
	for _, r := range rows {
		if got := r.call(ctx, r.pc); got != r.want {
			t.Errorf("%s: %s: code %d (%v), want %d (%v)", r.who, r.what, got, kerr.ErrorForCode(got), r.want, kerr.ErrorForCode(r.want))
		}
	}

	for _, c := range []struct {
		who  string
		pc   *principalClient
		want []string
	}{
		{"alice", alice, []string{"a-1"}},
		{"alice@127.0.0.2", aliceElsewhere, []string{"a-1"}}, // WRITE implies DESCRIBE from any host
		{"bob", bob, []string{"b"}},
		{"carol", carol, []string{"a-1", "b", "dn-topic"}},
		{dn, dnUser, []string{"dn-topic"}},
		{"ANONYMOUS", anonymous, nil},
		{"admin", admin, topics},
	} {
		if got := c.pc.listed(ctx); !slices.Equal(got, c.want) {
			t.Errorf("%s: Metadata lists %q, want %q", c.who, got, c.want)
		}
	}
}
