package broker

import (
	"maps"
	"net"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

// aclBroker is a broker with the ACL authorizer, super user User:admin,
// whose connections take the principal last given to as: the in-process
// stand-in for TLS and SASL.
type aclBroker struct {
	*testBroker
	who *atomic.Pointer[auth.Principal]
}

func startACLBroker(t *testing.T, overrides map[string]string) *aclBroker {
	t.Helper()
	who := new(atomic.Pointer[auth.Principal])
	admin := auth.User("admin")
	who.Store(&admin)
	props := map[string]string{
		"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
		"super.users":           "User:admin",
	}
	maps.Copy(props, overrides)
	tb := startBrokerWith(t, props, func(b *Broker) {
		b.principalOf = func(net.Conn) auth.Principal { return *who.Load() }
	})
	return &aclBroker{tb, who}
}

// as makes connections opened from now on authenticate as p.
func (ab *aclBroker) as(p auth.Principal) { ab.who.Store(&p) }

// asUser is as for User:name; "admin" is the super user.
func (ab *aclBroker) asUser(name string) { ab.as(auth.User(name)) }

// addACL creates one ACL as the super user and fails the test on error;
// the principal in use before is restored.
func (ab *aclBroker) addACL(typ auth.ResourceType, pat auth.PatternType, name, principal string, op auth.Operation, perm auth.Permission) {
	ab.t.Helper()
	prev := *ab.who.Load()
	ab.asUser("admin")
	defer ab.as(prev)
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(typ), name, kmsg.ACLResourcePatternType(pat)
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", kmsg.ACLOperation(op), kmsg.ACLPermissionType(perm)
	req.Creations = append(req.Creations, c)
	resp := ab.roundTrip(req).(*kmsg.CreateACLsResponse)
	if code := resp.Results[0].ErrorCode; code != 0 {
		ab.t.Fatalf("create acl: code %d %v", code, resp.Results[0].ErrorMessage)
	}
}

func (ab *aclBroker) allow(typ auth.ResourceType, name, user string, op auth.Operation) {
	ab.t.Helper()
	ab.addACL(typ, auth.PatternLiteral, name, "User:"+user, op, auth.PermAllow)
}

// deleteTopicACLsRequest is a DeleteAcls v3 of every topic ACL.
func deleteTopicACLsRequest() *kmsg.DeleteACLsRequest {
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	return del
}
