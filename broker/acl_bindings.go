package broker

import (
	"cmp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

// The conversions between the ACL APIs' wire form and package auth, and
// the validation Kafka applies to them (KafkaApis and AclAuthorizer).

const noAuthorizerMsg = "No Authorizer is configured."

// aclPattern is the pattern type of a request; v0 has none and means
// LITERAL (the schema's default).
func aclPattern(version int16, p kmsg.ACLResourcePatternType) auth.PatternType {
	if version == 0 || p == 0 {
		return auth.PatternLiteral
	}
	return auth.PatternType(p)
}

// creationBinding validates one CreateAcls creation as Kafka does and
// returns the binding, or INVALID_REQUEST and why.
func creationBinding(version int16, c kmsg.CreateACLsRequestCreation) (auth.Binding, int16, string) {
	bad := func(msg string) (auth.Binding, int16, string) {
		return auth.Binding{}, kerr.InvalidRequest.Code, msg
	}
	typ, pat := auth.ResourceType(c.ResourceType), aclPattern(version, c.ResourcePatternType)
	op, perm := auth.Operation(c.Operation), auth.Permission(c.PermissionType)
	switch {
	case typ <= auth.ResourceAny || typ > auth.ResourceUser:
		return bad("Invalid resource type")
	case pat != auth.PatternLiteral && pat != auth.PatternPrefixed:
		return bad("Invalid resource pattern type " + pat.String())
	case op <= auth.OpAny || op > auth.OpDescribeTokens:
		return bad("Invalid operation")
	case perm != auth.PermAllow && perm != auth.PermDeny:
		return bad("Invalid permission type")
	case c.ResourceName == "":
		return bad("Invalid empty resource name specified")
	case typ == auth.ResourceCluster && c.ResourceName != auth.ClusterName:
		return bad("The only valid name for the CLUSTER resource is " + auth.ClusterName)
	case pat == auth.PatternPrefixed && c.ResourceName == auth.Wildcard:
		return bad("Prefixed patterns may not have the wildcard name")
	case strings.ContainsRune(c.ResourceName, '/'):
		// The name is a znode name in Kafka's ZooKeeper layout.
		return bad("Resource names may not contain '/'")
	case c.Host == "":
		return bad("Invalid empty host")
	}
	if _, err := auth.ParsePrincipal(c.Principal); err != nil {
		return bad(err.Error())
	}
	return auth.Binding{
		Resource: auth.Resource{Type: typ, Name: c.ResourceName, Pattern: pat},
		Entry:    auth.Entry{Principal: c.Principal, Host: c.Host, Operation: op, Permission: perm},
	}, 0, ""
}

// aclFilter converts a DescribeAcls or DeleteAcls filter, or reports
// INVALID_REQUEST when it names an unknown value.
func aclFilter(version int16, typ kmsg.ACLResourceType, name *string, pat kmsg.ACLResourcePatternType,
	principal, host *string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) (auth.Filter, bool) {
	f := auth.Filter{
		Type: auth.ResourceType(typ), Name: name, Pattern: aclPattern(version, pat),
		Principal: principal, Host: host, Operation: auth.Operation(op), Permission: auth.Permission(perm),
	}
	ok := f.Type > auth.ResourceUnknown && f.Type <= auth.ResourceUser &&
		f.Pattern > auth.PatternUnknown && f.Pattern <= auth.PatternPrefixed &&
		f.Operation > auth.OpUnknown && f.Operation <= auth.OpDescribeTokens &&
		f.Permission > auth.PermUnknown && f.Permission <= auth.PermAllow
	return f, ok
}

// sortBindings orders bindings by resource then entry, so that answers
// are stable.
func sortBindings(bs []auth.Binding) {
	slices.SortFunc(bs, func(a, b auth.Binding) int {
		return cmp.Or(cmp.Compare(a.Resource.Type, b.Resource.Type), cmp.Compare(a.Resource.Pattern, b.Resource.Pattern),
			cmp.Compare(a.Resource.Name, b.Resource.Name), cmp.Compare(a.Entry.Principal, b.Entry.Principal),
			cmp.Compare(a.Entry.Host, b.Entry.Host), cmp.Compare(a.Entry.Operation, b.Entry.Operation),
			cmp.Compare(a.Entry.Permission, b.Entry.Permission))
	})
}
