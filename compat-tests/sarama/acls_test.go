package sarama_test

import (
	"testing"

	"github.com/IBM/sarama"
)

// TestACLs: sarama's admin CreateACLs, ListAcls and DeleteACL against
// Brook's ACL authorizer. sarama connects as User:ANONYMOUS, the super user.
func TestACLs(t *testing.T) {
	b := startBrookWith(t, func(string) []string {
		return []string{"authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "super.users=User:ANONYMOUS"}
	})
	admin := newAdmin(t, b.addr, sarama.V2_8_0_0)
	acls := []*sarama.ResourceAcls{
		{
			Resource: sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: "orders", ResourcePatternType: sarama.AclPatternLiteral},
			Acls:     []*sarama.Acl{{Principal: "User:alice", Host: "*", Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionAllow}},
		},
		{
			Resource: sarama.Resource{ResourceType: sarama.AclResourceGroup, ResourceName: "billing-", ResourcePatternType: sarama.AclPatternPrefixed},
			Acls:     []*sarama.Acl{{Principal: "User:alice", Host: "*", Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionDeny}},
		},
	}
	if err := admin.CreateACLs(acls); err != nil {
		t.Fatalf("CreateACLs: %v", err)
	}
	name := "orders"
	listed, err := admin.ListAcls(sarama.AclFilter{
		ResourceType: sarama.AclResourceTopic, ResourceName: &name, ResourcePatternTypeFilter: sarama.AclPatternLiteral,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny,
	})
	if err != nil || len(listed) != 1 || len(listed[0].Acls) != 1 || listed[0].Acls[0].Principal != "User:alice" {
		t.Fatalf("ListAcls orders: %+v %v", listed, err)
	}
	deleted, err := admin.DeleteACL(sarama.AclFilter{
		ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionDeny,
	}, false)
	if err != nil || len(deleted) != 1 || deleted[0].Resource.ResourceName != "billing-" {
		t.Fatalf("DeleteACL deny: %+v %v", deleted, err)
	}
	all, err := admin.ListAcls(sarama.AclFilter{
		ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny,
	})
	if err != nil || len(all) != 1 || all[0].Resource.ResourceName != "orders" {
		t.Fatalf("ListAcls after delete: %+v %v", all, err)
	}
}
