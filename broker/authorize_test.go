package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

// aclRule is one ACL a case sets up; an empty name means the case's topic.
type aclRule struct {
	typ  auth.ResourceType
	pat  auth.PatternType
	name string
	user string // "*" for User:*
	op   auth.Operation
	perm auth.Permission
}

func allowTopic(user string, op auth.Operation) aclRule {
	return aclRule{auth.ResourceTopic, auth.PatternLiteral, "", user, op, auth.PermAllow}
}

func denyTopic(user string, op auth.Operation) aclRule {
	return aclRule{auth.ResourceTopic, auth.PatternLiteral, "", user, op, auth.PermDeny}
}

// authCase is one row of an API's table: ACLs, who asks, the code wanted.
type authCase struct {
	name string
	acls []aclRule
	user string
	want *kerr.Error // nil: no error
}

// topicAuthCases are the rows every topic-level check shares, for an API
// that needs op on the topic (code refused).
func topicAuthCases(op auth.Operation, refused *kerr.Error) []authCase {
	return []authCase{
		{"allowed", []aclRule{allowTopic("alice", op)}, "alice", nil},
		{"no acl", nil, "alice", refused},
		{"other principal", []aclRule{allowTopic("bob", op)}, "alice", refused},
		{"deny overrides allow", []aclRule{allowTopic("alice", op), denyTopic("alice", op)}, "alice", refused},
		{"deny all overrides allow", []aclRule{allowTopic("alice", op), denyTopic("*", auth.OpAll)}, "alice", refused},
		{"prefixed", []aclRule{{auth.ResourceTopic, auth.PatternPrefixed, "prefix-", "alice", op, auth.PermAllow}}, "alice", nil},
		{"wildcard topic", []aclRule{{auth.ResourceTopic, auth.PatternLiteral, "*", "carol", op, auth.PermAllow}}, "carol", nil},
		{"wildcard principal", []aclRule{allowTopic("*", op)}, "alice", nil},
		{"all", []aclRule{allowTopic("alice", auth.OpAll)}, "alice", nil},
		{"super user", nil, "admin", nil},
	}
}

// runAuthTable runs the cases of one API, each on its own topic
// "prefix-<api>-<n>" created beforehand by the super user.
func runAuthTable(t *testing.T, ab *aclBroker, api string, cases []authCase, call func(topic string) int16) {
	t.Helper()
	for i, c := range cases {
		t.Run(api+"/"+c.name, func(t *testing.T) {
			topic := fmt.Sprintf("prefix-%s-%d", api, i)
			ab.asUser("admin")
			ab.createTopic(topic, 1, nil)
			for _, a := range c.acls {
				name := a.name
				if name == "" {
					name = topic
				}
				ab.addACL(a.typ, a.pat, name, "User:"+a.user, a.op, a.perm)
			}
			ab.asUser(c.user)
			got := call(topic)
			want := int16(0)
			if c.want != nil {
				want = c.want.Code
			}
			if got != want {
				t.Fatalf("%s as %s: code %d (%v), want %d", api, c.user, got, kerr.ErrorForCode(got), want)
			}
			// Remove this case's ACLs: the wildcard and prefixed ones
			// would otherwise leak into later rows.
			ab.asUser("admin")
			ab.roundTrip(deleteTopicACLsRequest())
		})
	}
}

func TestAuthorizeTopicAPIs(t *testing.T) {
	ab := startACLBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	runAuthTable(t, ab, "produce", topicAuthCases(auth.OpWrite, kerr.TopicAuthorizationFailed), func(topic string) int16 {
		return produceRaw(t, ab.testBroker, topic, 0, 1, stampedBatch(t, 1, 1), nil).ErrorCode
	})
	runAuthTable(t, ab, "fetch", topicAuthCases(auth.OpRead, kerr.TopicAuthorizationFailed), func(topic string) int16 {
		req := longPollFetch(topic, 0)
		req.MinBytes = 0
		return ab.roundTrip(req).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
	})
	runAuthTable(t, ab, "listoffsets", topicAuthCases(auth.OpDescribe, kerr.TopicAuthorizationFailed), func(topic string) int16 {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = 5
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = 0, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return ab.roundTrip(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode
	})
	runAuthTable(t, ab, "describeproducers", topicAuthCases(auth.OpRead, kerr.TopicAuthorizationFailed), func(topic string) int16 {
		req := kmsg.NewPtrDescribeProducersRequest()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		return ab.roundTrip(req).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode
	})
	runAuthTable(t, ab, "offsetforleaderepoch", topicAuthCases(auth.OpDescribe, kerr.TopicAuthorizationFailed), func(topic string) int16 {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = 3, -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, -1, 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return ab.roundTrip(req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
	})
	metadata := func(topic string) int16 {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 9
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = &topic
		req.Topics = append(req.Topics, mt)
		return ab.roundTrip(req).(*kmsg.MetadataResponse).Topics[0].ErrorCode
	}
	runAuthTable(t, ab, "metadata", topicAuthCases(auth.OpDescribe, kerr.TopicAuthorizationFailed), metadata)
	// DESCRIBE is implied by READ, WRITE, DELETE and ALTER, not by CREATE.
	for _, op := range []auth.Operation{auth.OpRead, auth.OpWrite, auth.OpDelete, auth.OpAlter} {
		runAuthTable(t, ab, "metadata-by-"+op.String(), []authCase{{"implied", []aclRule{allowTopic("alice", op)}, "alice", nil}}, metadata)
	}
	runAuthTable(t, ab, "metadata-by-create", []authCase{{"not implied", []aclRule{allowTopic("alice", auth.OpCreate)}, "alice", kerr.TopicAuthorizationFailed}}, metadata)
}

// Metadata for all topics lists only those the principal may describe.
func TestAuthorizeMetadataListsDescribable(t *testing.T) {
	ab := startACLBroker(t, nil)
	ab.createTopic("visible", 1, nil)
	ab.createTopic("hidden", 1, nil)
	ab.allow(auth.ResourceTopic, "visible", "alice", auth.OpRead)
	ab.asUser("alice")
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	req.IncludeTopicAuthorizedOperations = true
	resp := ab.roundTrip(req).(*kmsg.MetadataResponse)
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "visible" {
		t.Fatalf("alice sees %d topics", len(resp.Topics))
	}
	// READ (3) and the DESCRIBE it implies (8).
	if ops := resp.Topics[0].AuthorizedOperations; ops != 1<<3|1<<8 {
		t.Fatalf("authorized operations %b, want READ and DESCRIBE", ops)
	}

	// Auto-creation needs CREATE on the cluster or the topic.
	mt := kmsg.NewMetadataRequestTopic()
	name := "new-topic"
	mt.Topic = &name
	req.Topics = []kmsg.MetadataRequestTopic{mt}
	req.AllowAutoTopicCreation = true
	ab.allow(auth.ResourceTopic, name, "alice", auth.OpDescribe)
	if code := ab.roundTrip(req).(*kmsg.MetadataResponse).Topics[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("auto-create without CREATE: code %d", code)
	}
	if _, ok := ab.b.meta.topic(name); ok {
		t.Fatal("topic created without CREATE")
	}
	ab.allow(auth.ResourceTopic, name, "alice", auth.OpCreate)
	ab.asUser("alice")
	if code := ab.roundTrip(req).(*kmsg.MetadataResponse).Topics[0].ErrorCode; code != kerr.LeaderNotAvailable.Code && code != 0 {
		t.Fatalf("auto-create with CREATE: code %d", code)
	}
}
