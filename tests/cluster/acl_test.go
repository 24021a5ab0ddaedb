package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// aclPropagation is how soon an ACL created through one broker must apply
// on every broker (the "within a second"): the others follow the
// /kafka-acl-changes notification through a ZooKeeper watch.
const aclPropagation = time.Second

// TestACLsApplyOnEveryBroker creates a DENY ACL through broker 1 and sees
// brokers 2 and 3 refuse within a second, then deletes it through broker 1
// and sees them allow again; then the same with Kafka 3.9's kafka-acls
// writing into ZooKeeper itself, which also lists an ACL Brook wrote. The clients are ANONYMOUS over PLAINTEXT and
// allow.everyone.if.no.acl.found lets everything without an ACL through.
func TestACLsApplyOnEveryBroker(t *testing.T) {
	c := startCluster(t, 3, map[string]string{
		"authorizer.class.name":          "kafka.security.authorizer.AclAuthorizer",
		"allow.everyone.if.no.acl.found": "true",
	})
	c.createTopic("acl-t", 1, nil)
	clients := map[int32]*kgo.Client{}
	for _, id := range c.ids {
		clients[id] = testutil.Client(t, c.broker(id).Addr())
	}
	// ask sends req to broker id alone.
	ask := func(id int32, req kmsg.Request) (kmsg.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		return clients[id].SeedBrokers()[0].Request(ctx, req)
	}
	topicCode := func(id int32) (int16, error) {
		req := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("acl-t")
		req.Topics = append(req.Topics, mt)
		resp, err := ask(id, req)
		if err != nil {
			return 0, err
		}
		return resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode, nil
	}
	expect := func(timeout time.Duration, want int16) error {
		return testutil.Poll(timeout, func() error {
			for _, id := range []int32{2, 3} {
				code, err := topicCode(id)
				if err != nil {
					return err
				}
				if code != want {
					return fmt.Errorf("broker %d: code %d (%v), want %d", id, code, kerr.ErrorForCode(code), want)
				}
			}
			return nil
		})
	}
	if err := expect(convergeTimeout, 0); err != nil {
		t.Fatalf("before any ACL: %v", err)
	}

	create := kmsg.NewPtrCreateACLsRequest()
	create.Version = 3
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, "acl-t", kmsg.ACLResourcePatternTypeLiteral
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:ANONYMOUS", "*", kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeDeny
	create.Creations = append(create.Creations, cr)
	resp, err := ask(1, create)
	if err != nil || resp.(*kmsg.CreateACLsResponse).Results[0].ErrorCode != 0 {
		t.Fatalf("create acl through broker 1: %v %+v", err, resp)
	}
	if err := expect(aclPropagation, kerr.TopicAuthorizationFailed.Code); err != nil {
		t.Fatalf("within %v of CreateAcls through broker 1: %v", aclPropagation, err)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	resp, err = ask(1, del)
	if err != nil || resp.(*kmsg.DeleteACLsResponse).Results[0].ErrorCode != 0 {
		t.Fatalf("delete acls through broker 1: %v %+v", err, resp)
	}
	if err := expect(aclPropagation, 0); err != nil {
		t.Fatalf("within %v of DeleteAcls through broker 1: %v", aclPropagation, err)
	}

	// Kafka 3.9's kafka-acls writing through its own AclAuthorizer
	// straight into ZooKeeper: Brook honours what it writes, and it
	// lists what Brook wrote.
	zkACLs := func(args ...string) string {
		t.Helper()
		t.Setenv("BROOK_KAFKA_HOME", testutil.KafkaRelease(t, "kafka3"))
		args = append([]string{"--authorizer-properties", "zookeeper.connect=" + c.zk.Connect() + zkChroot}, args...)
		stdout, stderr, err := testutil.KafkaTool(t, "kafka-acls.sh", args...)
		if err != nil {
			t.Fatalf("kafka-acls (3.9, ZooKeeper) %v: %v\nstdout: %s\nstderr: %s", args, err, stdout, stderr)
		}
		return stdout
	}
	zkACLs("--add", "--deny-principal", "User:ANONYMOUS", "--operation", "Describe", "--topic", "acl-t")
	if err := expect(convergeTimeout, kerr.TopicAuthorizationFailed.Code); err != nil {
		t.Fatalf("after Kafka 3.9's kafka-acls --add through ZooKeeper: %v", err)
	}
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeGroup, "billing-", kmsg.ACLResourcePatternTypePrefixed
	cr.Principal, cr.Operation, cr.PermissionType = "User:alice", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	create.Creations = []kmsg.CreateACLsRequestCreation{cr}
	if resp, err := ask(1, create); err != nil || resp.(*kmsg.CreateACLsResponse).Results[0].ErrorCode != 0 {
		t.Fatalf("create a prefixed group acl through broker 1: %v %+v", err, resp)
	}
	out := zkACLs("--list")
	for _, want := range []string{"name=acl-t, patternType=LITERAL", "principal=User:ANONYMOUS, host=*, operation=DESCRIBE, permissionType=DENY",
		"name=billing-, patternType=PREFIXED", "principal=User:alice, host=*, operation=READ, permissionType=ALLOW"} {
		if !strings.Contains(out, want) {
			t.Errorf("Kafka 3.9's kafka-acls --list through ZooKeeper does not show %q:\n%s", want, out)
		}
	}
	zkACLs("--remove", "--force", "--deny-principal", "User:ANONYMOUS", "--operation", "Describe", "--topic", "acl-t")
	if err := expect(convergeTimeout, 0); err != nil {
		t.Fatalf("after Kafka 3.9's kafka-acls --remove through ZooKeeper: %v", err)
	}
}
