package cluster

import (
	"context"
	"fmt"
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
// and sees them allow again. The clients are ANONYMOUS over PLAINTEXT and
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
}
