package auth

import (
	"slices"
	"strings"
	"sync"
)

// Authorizer decides requests as Kafka's AclAuthorizer (and its
// predecessor SimpleAclAuthorizer) does, over the ACLs it holds in memory;
// the store sync (aclsync.go) keeps them equal to ZooKeeper's.
//
// A request by principal P from host H for operation O on resource R is
// allowed when P is a super user; otherwise the ACLs matching R are
// gathered (the literal ACLs of R's name, the literal "*" ACLs of R's
// type, and the prefixed ACLs whose name begins R's name); with none,
// allow.everyone.if.no.acl.found decides. Then any matching deny entry
// refuses, whatever allows; otherwise an allow entry is needed.
type Authorizer struct {
	superUsers   map[string]bool
	allowIfNoACL bool

	mu   sync.RWMutex
	acls map[Resource][]Entry
	// prefixed indexes the prefixed patterns by resource type, so that a
	// check looks up each prefix of a name instead of scanning every ACL;
	// lengths holds the distinct pattern lengths per type.
	prefixed map[ResourceType]map[string][]Entry
	lengths  map[ResourceType][]int
}

// NewAuthorizer makes an authorizer with no ACLs. superUsers are principals
// in Kafka's form ("User:admin").
func NewAuthorizer(superUsers []string, allowEveryoneIfNoACLFound bool) *Authorizer {
	a := &Authorizer{superUsers: map[string]bool{}, allowIfNoACL: allowEveryoneIfNoACLFound, acls: map[Resource][]Entry{},
		prefixed: map[ResourceType]map[string][]Entry{}, lengths: map[ResourceType][]int{}}
	for _, u := range superUsers {
		if u = strings.TrimSpace(u); u != "" {
			a.superUsers[u] = true
		}
	}
	return a
}

// ParseSuperUsers splits super.users as Kafka does: principals separated by
// semicolons (a principal name may hold commas).
func ParseSuperUsers(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// IsAuthorizerClass reports whether name is a class Brook implements:
// Kafka's ZooKeeper-mode authorizer under its current and its old name.
func IsAuthorizerClass(name string) bool {
	switch name {
	case "kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer":
		return true
	}
	return false
}

// SetResource replaces the entries of one resource pattern (none deletes it).
func (a *Authorizer) SetResource(r Resource, entries []Entry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(entries) == 0 {
		delete(a.acls, r)
	} else {
		a.acls[r] = slices.Clone(entries)
	}
	if r.Pattern == PatternPrefixed {
		a.indexPrefixedLocked(r.Type)
	}
}

// indexPrefixedLocked rebuilds typ's prefixed index from a.acls. ACL
// changes are rare next to checks, so a rebuild per change is cheap.
func (a *Authorizer) indexPrefixedLocked(typ ResourceType) {
	byName := map[string][]Entry{}
	var lengths []int
	for r, es := range a.acls {
		if r.Type == typ && r.Pattern == PatternPrefixed {
			byName[r.Name] = es
			lengths = append(lengths, len(r.Name))
		}
	}
	slices.Sort(lengths)
	a.prefixed[typ], a.lengths[typ] = byName, slices.Compact(lengths)
}

// Authorize decides one operation on one resource (a name, not a pattern).
func (a *Authorizer) Authorize(p Principal, host string, op Operation, typ ResourceType, name string) bool {
	principal := p.String()
	if a.superUsers[principal] {
		return true
	}
	wildcardPrincipal := p.Type + ":" + Wildcard
	applies := func(e Entry) bool {
		return (e.Principal == principal || e.Principal == wildcardPrincipal) && (e.Host == host || e.Host == Wildcard)
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	// Deny entries match the operation itself only: denying READ does
	// not deny DESCRIBE.
	found, denied := false, false
	a.eachMatching(typ, name, func(es []Entry) bool {
		found = true
		for _, e := range es {
			if e.Permission == PermDeny && (e.Operation == op || e.Operation == OpAll) && applies(e) {
				denied = true
				return false
			}
		}
		return true
	})
	if !found {
		return a.allowIfNoACL
	}
	if denied {
		return false
	}
	allowed := impliedBy(op)
	granted := false
	a.eachMatching(typ, name, func(es []Entry) bool {
		for _, e := range es {
			if e.Permission == PermAllow && (e.Operation == OpAll || slices.Contains(allowed, e.Operation)) && applies(e) {
				granted = true
				return false
			}
		}
		return true
	})
	return granted
}

// impliedBy lists the operations whose allow entries allow op, as Kafka's
// AclAuthorizer: DESCRIBE by READ, WRITE, DELETE and ALTER, and
// DESCRIBE_CONFIGS by ALTER_CONFIGS (ALL is handled by the caller).
func impliedBy(op Operation) []Operation {
	switch op {
	case OpDescribe:
		return []Operation{OpDescribe, OpRead, OpWrite, OpDelete, OpAlter}
	case OpDescribeConfigs:
		return []Operation{OpDescribeConfigs, OpAlterConfigs}
	}
	return []Operation{op}
}

// eachMatching calls fn with each non-empty entry list that applies to a
// resource name (its literal pattern, its type's literal "*" and every
// prefixed pattern the name begins with) until fn returns false. Called
// with a.mu held.
func (a *Authorizer) eachMatching(typ ResourceType, name string, fn func([]Entry) bool) {
	if es := a.acls[Resource{typ, name, PatternLiteral}]; len(es) > 0 && !fn(es) {
		return
	}
	if name != Wildcard {
		if es := a.acls[Resource{typ, Wildcard, PatternLiteral}]; len(es) > 0 && !fn(es) {
			return
		}
	}
	byName := a.prefixed[typ]
	for _, n := range a.lengths[typ] {
		if n > len(name) {
			return
		}
		if es := byName[name[:n]]; len(es) > 0 && !fn(es) {
			return
		}
	}
}

// AuthorizeAny reports whether the principal may perform op on some
// resource of the type, as Kafka's authorizeByResourceType: used where
// Kafka asks whether any transactional id may be written (idempotent
// producers without IDEMPOTENT_WRITE on the cluster). A super user may;
// otherwise an allow entry for the principal (or User:*), host and op
// (or ALL) on some pattern of the type that is not denied by a deny entry
// on the same or a wider pattern.
func (a *Authorizer) AuthorizeAny(p Principal, host string, op Operation, typ ResourceType) bool {
	if a.superUsers[p.String()] {
		return true
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	principal, wildcardPrincipal := p.String(), p.Type+":"+Wildcard
	hit := func(e Entry, perm Permission) bool {
		return e.Permission == perm &&
			(e.Principal == principal || e.Principal == wildcardPrincipal) &&
			(e.Host == host || e.Host == Wildcard) &&
			(e.Operation == op || e.Operation == OpAll)
	}
	denied := func(r Resource) bool {
		for d, es := range a.acls {
			if d.Type != typ {
				continue
			}
			wider := (d.Pattern == PatternLiteral && (d.Name == Wildcard || (r.Pattern == PatternLiteral && d.Name == r.Name))) ||
				(d.Pattern == PatternPrefixed && strings.HasPrefix(r.Name, d.Name))
			if !wider {
				continue
			}
			for _, e := range es {
				if hit(e, PermDeny) {
					return true
				}
			}
		}
		return false
	}
	for r, es := range a.acls {
		if r.Type != typ {
			continue
		}
		for _, e := range es {
			if hit(e, PermAllow) && !denied(r) {
				return true
			}
		}
	}
	return false
}
