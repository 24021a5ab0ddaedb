package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func describeAllACLs(tb *testBroker) *kmsg.DescribeACLsResponse {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.Version = 3
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	return tb.roundTrip(req).(*kmsg.DescribeACLsResponse)
}

func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	tb := startBroker(t, nil)
	if code := describeAllACLs(tb).ErrorCode; code != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls: code %d, want SECURITY_DISABLED", code)
	}
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	req.Creations = append(req.Creations, kmsg.NewCreateACLsRequestCreation())
	if code := tb.roundTrip(req).(*kmsg.CreateACLsResponse).Results[0].ErrorCode; code != kerr.SecurityDisabled.Code {
		t.Fatalf("CreateAcls: code %d, want SECURITY_DISABLED", code)
	}
}

func TestACLAPIs(t *testing.T) {
	ab := startACLBroker(t, nil)
	// Not a super user and no ACL: the ACL APIs need the cluster.
	ab.asUser("alice")
	if code := describeAllACLs(ab.testBroker).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("DescribeAcls by alice: code %d, want CLUSTER_AUTHORIZATION_FAILED", code)
	}
	creq := kmsg.NewPtrCreateACLsRequest()
	creq.Version = 3
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "app-", kmsg.ACLResourcePatternTypePrefixed
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:bob", "*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
	bad := c
	bad.ResourceType, bad.ResourceName = kmsg.ACLResourceTypeCluster, "other"
	creq.Creations = []kmsg.CreateACLsRequestCreation{c, bad}
	if code := ab.roundTrip(creq).(*kmsg.CreateACLsResponse).Results[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("CreateAcls by alice: code %d", code)
	}

	ab.asUser("admin")
	res := ab.roundTrip(creq).(*kmsg.CreateACLsResponse).Results
	if res[0].ErrorCode != 0 || res[1].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("CreateAcls by admin: codes %d %d", res[0].ErrorCode, res[1].ErrorCode)
	}
	// alice may describe once she has DESCRIBE on the cluster.
	ab.allow(auth.ResourceCluster, auth.ClusterName, "alice", auth.OpDescribe)
	ab.asUser("alice")
	d := describeAllACLs(ab.testBroker)
	if d.ErrorCode != 0 || len(d.Resources) != 2 {
		t.Fatalf("DescribeAcls by alice: code %d, %d resources", d.ErrorCode, len(d.Resources))
	}
	var prefixed *kmsg.DescribeACLsResponseResource
	for i := range d.Resources {
		if d.Resources[i].ResourcePatternType == kmsg.ACLResourcePatternTypePrefixed {
			prefixed = &d.Resources[i]
		}
	}
	if prefixed == nil || prefixed.ResourceName != "app-" || len(prefixed.ACLs) != 1 || prefixed.ACLs[0].Principal != "User:bob" {
		t.Fatalf("prefixed acl described as %+v", prefixed)
	}

	// MATCH filter for a topic name finds the prefixed ACL.
	dreq := kmsg.NewPtrDescribeACLsRequest()
	dreq.Version = 3
	name := "app-1"
	dreq.ResourceType, dreq.ResourceName, dreq.ResourcePatternType = kmsg.ACLResourceTypeTopic, &name, kmsg.ACLResourcePatternTypeMatch
	dreq.Operation, dreq.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if got := ab.roundTrip(dreq).(*kmsg.DescribeACLsResponse); len(got.Resources) != 1 {
		t.Fatalf("match filter: %d resources", len(got.Resources))
	}

	// alice may not delete; admin may.
	del := deleteTopicACLsRequest()
	if code := ab.roundTrip(del).(*kmsg.DeleteACLsResponse).Results[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("DeleteAcls by alice: code %d", code)
	}
	ab.asUser("admin")
	dr := ab.roundTrip(del).(*kmsg.DeleteACLsResponse).Results[0]
	if dr.ErrorCode != 0 || len(dr.MatchingACLs) != 1 || dr.MatchingACLs[0].ResourceName != "app-" {
		t.Fatalf("DeleteAcls by admin: %+v", dr)
	}
	if got := describeAllACLs(ab.testBroker); len(got.Resources) != 1 {
		t.Fatalf("after delete: %d resources, want the cluster's", len(got.Resources))
	}

	// ACLs survive a restart: they are in the store.
	ab.restart()
	if got := describeAllACLs(ab.testBroker); len(got.Resources) != 1 || got.Resources[0].ResourceType != kmsg.ACLResourceTypeCluster {
		t.Fatalf("after restart: %+v", got.Resources)
	}
}
