package auth

import (
	"fmt"
	"strings"
)

// The ACL vocabulary is Kafka's: the numeric codes are those of the
// protocol (CreateAcls, DescribeAcls, DeleteAcls and the
// authorized-operations bitfields), the names those of the ZooKeeper JSON
// and of the resource type path components under /kafka-acl.

// Operation is Kafka's AclOperation.
type Operation int8

// Operations, with the protocol codes of org.apache.kafka.common.acl.AclOperation.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
)

var opNames = map[Operation]string{
	OpAll: "All", OpRead: "Read", OpWrite: "Write", OpCreate: "Create",
	OpDelete: "Delete", OpAlter: "Alter", OpDescribe: "Describe",
	OpClusterAction: "ClusterAction", OpDescribeConfigs: "DescribeConfigs",
	OpAlterConfigs: "AlterConfigs", OpIdempotentWrite: "IdempotentWrite",
	OpCreateTokens: "CreateTokens", OpDescribeTokens: "DescribeTokens",
}

func (o Operation) String() string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("Operation(%d)", int8(o))
}

// ParseOperation reads an operation name as Kafka's ZooKeeper JSON holds
// it; Kafka compares the names without regard to case.
func ParseOperation(s string) (Operation, error) {
	for o, n := range opNames {
		if strings.EqualFold(strings.ReplaceAll(s, "_", ""), n) {
			return o, nil
		}
	}
	return OpUnknown, fmt.Errorf("unknown acl operation %q", s)
}

// ResourceType is Kafka's ResourceType.
type ResourceType int8

// Resource types, with the protocol codes.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

var resourceNames = map[ResourceType]string{
	ResourceTopic: "Topic", ResourceGroup: "Group", ResourceCluster: "Cluster",
	ResourceTransactionalID: "TransactionalId", ResourceDelegationToken: "DelegationToken",
	ResourceUser: "User",
}

// String is the name Kafka uses in ZooKeeper paths ("TransactionalId").
func (t ResourceType) String() string {
	if n, ok := resourceNames[t]; ok {
		return n
	}
	return fmt.Sprintf("ResourceType(%d)", int8(t))
}

// ParseResourceType reads a resource type name, without regard to case
// or underscores: the camel-case path name ("TransactionalId") and the
// Java enum name ("TRANSACTIONAL_ID") both.
func ParseResourceType(s string) (ResourceType, error) {
	for t, n := range resourceNames {
		if strings.EqualFold(n, strings.ReplaceAll(s, "_", "")) {
			return t, nil
		}
	}
	return ResourceUnknown, fmt.Errorf("unknown resource type %q", s)
}

// ClusterName is the name of the one cluster resource, as Kafka's
// Resource.CLUSTER_NAME.
const ClusterName = "kafka-cluster"

// Wildcard is the resource name, principal name and host that match all.
const Wildcard = "*"

// WildcardPrincipal matches every principal ("User:*").
var WildcardPrincipal = Principal{Type: UserType, Name: Wildcard}

// PatternType is Kafka's PatternType.
type PatternType int8

// Pattern types, with the protocol codes. Any and Match occur only in filters.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

func (p PatternType) String() string {
	switch p {
	case PatternAny:
		return "Any"
	case PatternMatch:
		return "Match"
	case PatternLiteral:
		return "Literal"
	case PatternPrefixed:
		return "Prefixed"
	}
	return fmt.Sprintf("PatternType(%d)", int8(p))
}

// Permission is Kafka's AclPermissionType.
type Permission int8

// Permissions, with the protocol codes.
const (
	PermUnknown Permission = 0
	PermAny     Permission = 1
	PermDeny    Permission = 2
	PermAllow   Permission = 3
)

func (p Permission) String() string {
	switch p {
	case PermAllow:
		return "Allow"
	case PermDeny:
		return "Deny"
	case PermAny:
		return "Any"
	}
	return fmt.Sprintf("Permission(%d)", int8(p))
}

// ParsePermission reads "Allow" or "Deny", without regard to case.
func ParsePermission(s string) (Permission, error) {
	switch {
	case strings.EqualFold(s, "Allow"):
		return PermAllow, nil
	case strings.EqualFold(s, "Deny"):
		return PermDeny, nil
	}
	return PermUnknown, fmt.Errorf("unknown acl permission type %q", s)
}

// ParsePrincipal reads Kafka's "Type:Name" form; the name may hold colons.
func ParsePrincipal(s string) (Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || typ == "" {
		return Principal{}, fmt.Errorf("principal %q is not of the form Type:Name", s)
	}
	return Principal{Type: typ, Name: name}, nil
}

// Resource is a resource pattern: what an ACL is written for.
type Resource struct {
	Type    ResourceType
	Name    string
	Pattern PatternType
}

func (r Resource) String() string {
	return fmt.Sprintf("%s:%s:%s", r.Type, r.Pattern, r.Name)
}

// Entry is one access control entry of a resource: who, from where, what,
// allowed or denied.
type Entry struct {
	Principal  string // "User:alice", or "User:*"
	Host       string // an address, or "*"
	Operation  Operation
	Permission Permission
}

// Binding is an entry with its resource pattern, as the ACL APIs carry it.
type Binding struct {
	Resource Resource
	Entry    Entry
}
