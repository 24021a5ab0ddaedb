package auth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Kafka's ZooKeeper layout for ACLs (kafka.zk.ZkData: LiteralAclStore,
// ExtendedAclStore, LiteralAclChangeStore, ExtendedAclChangeStore), so
// that ACLs written by Kafka's kafka-acls (or a Kafka broker) against the
// same ZooKeeper are honoured by Brook and the other way round:
//
//	/kafka-acl/<Type>/<name>                      literal patterns
//	/kafka-acl-extended/prefixed/<Type>/<name>    prefixed patterns
//	/kafka-acl-changes/acl_changes_<seq>          "TOPIC:<name>"
//	/kafka-acl-extended-changes/acl_changes_<seq> {"version":1,"resourceType":"TOPIC","name":..,"patternType":"PREFIXED"}
//
// <Type> is the camel-case name ("TransactionalId"); the change nodes
// carry the Java enum names ("TRANSACTIONAL_ID"), which is what Kafka's
// ResourceType.toString gives.
const (
	LiteralACLPath         = "/kafka-acl"
	ExtendedACLPath        = "/kafka-acl-extended"
	LiteralACLChangesPath  = "/kafka-acl-changes"
	ExtendedACLChangesPath = "/kafka-acl-extended-changes"
	ACLChangePrefix        = "acl_changes_"
)

// ACLPaths are the persistent paths the sync expects.
var ACLPaths = []string{LiteralACLPath, ExtendedACLPath + "/prefixed", LiteralACLChangesPath, ExtendedACLChangesPath}

// StoredTypes are the resource types with a ZooKeeper directory.
var StoredTypes = []ResourceType{ResourceTopic, ResourceGroup, ResourceCluster, ResourceTransactionalID, ResourceDelegationToken, ResourceUser}

// TypeDir is the directory holding a pattern type's ACLs of one resource type.
func TypeDir(p PatternType, t ResourceType) string {
	if p == PatternPrefixed {
		return ExtendedACLPath + "/prefixed/" + t.String()
	}
	return LiteralACLPath + "/" + t.String()
}

// ResourcePath is the znode of one resource pattern's ACLs.
func ResourcePath(r Resource) string { return TypeDir(r.Pattern, r.Type) + "/" + r.Name }

// enumName is a resource type's Java enum name ("TRANSACTIONAL_ID").
func (t ResourceType) enumName() string {
	switch t {
	case ResourceTransactionalID:
		return "TRANSACTIONAL_ID"
	case ResourceDelegationToken:
		return "DELEGATION_TOKEN"
	}
	return strings.ToUpper(t.String())
}

type zkEntry struct {
	Principal      string `json:"principal"`
	PermissionType string `json:"permissionType"`
	Operation      string `json:"operation"`
	Host           string `json:"host"`
}

type zkACLs struct {
	Version int       `json:"version"`
	ACLs    []zkEntry `json:"acls"`
}

// EncodeEntries is a resource znode's data, Kafka's AclEntry JSON.
func EncodeEntries(es []Entry) []byte {
	z := zkACLs{Version: 1, ACLs: make([]zkEntry, 0, len(es))}
	for _, e := range es {
		z.ACLs = append(z.ACLs, zkEntry{e.Principal, e.Permission.String(), e.Operation.String(), e.Host})
	}
	b, _ := json.Marshal(z)
	return b
}

// DecodeEntries reads a resource znode. Empty data (a node Kafka created
// as a parent) holds no entries.
func DecodeEntries(data []byte) ([]Entry, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var z zkACLs
	if err := json.Unmarshal(data, &z); err != nil {
		return nil, fmt.Errorf("decode acls: %w", err)
	}
	if z.Version != 1 {
		return nil, fmt.Errorf("decode acls: unsupported version %d", z.Version)
	}
	out := make([]Entry, 0, len(z.ACLs))
	for _, a := range z.ACLs {
		op, err := ParseOperation(a.Operation)
		if err != nil {
			return nil, fmt.Errorf("decode acls: %w", err)
		}
		perm, err := ParsePermission(a.PermissionType)
		if err != nil {
			return nil, fmt.Errorf("decode acls: %w", err)
		}
		if _, err := ParsePrincipal(a.Principal); err != nil {
			return nil, fmt.Errorf("decode acls: %w", err)
		}
		out = append(out, Entry{Principal: a.Principal, Host: a.Host, Operation: op, Permission: perm})
	}
	return out, nil
}

type zkChange struct {
	Version      int    `json:"version"`
	ResourceType string `json:"resourceType"`
	Name         string `json:"name"`
	PatternType  string `json:"patternType"`
}

// ChangePath is the sequential node prefix a change to r is announced under.
func ChangePath(r Resource) string {
	if r.Pattern == PatternLiteral {
		return LiteralACLChangesPath + "/" + ACLChangePrefix
	}
	return ExtendedACLChangesPath + "/" + ACLChangePrefix
}

// EncodeChange is a change notification's data for r.
func EncodeChange(r Resource) []byte {
	if r.Pattern == PatternLiteral {
		return []byte(r.Type.enumName() + ":" + r.Name)
	}
	b, _ := json.Marshal(zkChange{Version: 1, ResourceType: r.Type.enumName(), Name: r.Name, PatternType: strings.ToUpper(r.Pattern.String())})
	return b
}

// DecodeChange reads a change notification found under the literal
// (extended false) or the extended change path.
func DecodeChange(data []byte, extended bool) (Resource, error) {
	if !extended {
		typ, name, ok := strings.Cut(string(data), ":")
		if !ok {
			return Resource{}, fmt.Errorf("acl change %q is not ResourceType:ResourceName", data)
		}
		t, err := ParseResourceType(typ)
		if err != nil {
			return Resource{}, fmt.Errorf("acl change: %w", err)
		}
		return Resource{t, name, PatternLiteral}, nil
	}
	var z zkChange
	if err := json.Unmarshal(data, &z); err != nil {
		return Resource{}, fmt.Errorf("decode acl change: %w", err)
	}
	if z.Version > 1 {
		return Resource{}, fmt.Errorf("decode acl change: unsupported version %d", z.Version)
	}
	t, err := ParseResourceType(z.ResourceType)
	if err != nil {
		return Resource{}, fmt.Errorf("decode acl change: %w", err)
	}
	var p PatternType
	switch strings.ToUpper(z.PatternType) {
	case "LITERAL":
		p = PatternLiteral
	case "PREFIXED":
		p = PatternPrefixed
	default:
		return Resource{}, fmt.Errorf("decode acl change: unknown pattern type %q", z.PatternType)
	}
	return Resource{t, z.Name, p}, nil
}
