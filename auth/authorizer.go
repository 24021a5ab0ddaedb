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
}

// NewAuthorizer makes an authorizer with no ACLs. superUsers are principals
// in Kafka's form ("User:admin").
func NewAuthorizer(superUsers []string, allowEveryoneIfNoACLFound bool) *Authorizer {
	a := &Authorizer{superUsers: map[string]bool{}, allowIfNoACL: allowEveryoneIfNoACLFound, acls: map[Resource][]Entry{}}
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
		return
	}
	a.acls[r] = slices.Clone(entries)
}

// Authorize decides one operation on one resource (a name, not a pattern).
func (a *Authorizer) Authorize(p Principal, host string, op Operation, typ ResourceType, name string) bool {
	if a.superUsers[p.String()] {
		return true
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	matching := a.matching(typ, name)
	if len(matching) == 0 {
		return a.allowIfNoACL
	}
	principal := p.String()
	wildcardPrincipal := p.Type + ":" + Wildcard
	matches := func(e Entry, perm Permission, ops []Operation) bool {
		if e.Permission != perm {
			return false
		}
		if e.Principal != principal && e.Principal != wildcardPrincipal {
			return false
		}
		if e.Host != host && e.Host != Wildcard {
			return false
		}
		return e.Operation == OpAll || slices.Contains(ops, e.Operation)
	}
	// Deny entries match the operation itself only: denying READ does
	// not deny DESCRIBE.
	for _, e := range matching {
		if matches(e, PermDeny, []Operation{op}) {
			return false
		}
	}
	allowed := impliedBy(op)
	for _, e := range matching {
		if matches(e, PermAllow, allowed) {
			return true
		}
	}
	return false
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

// matching gathers the entries that apply to a resource name. Called with
// a.mu held.
func (a *Authorizer) matching(typ ResourceType, name string) []Entry {
	var out []Entry
	out = append(out, a.acls[Resource{typ, name, PatternLiteral}]...)
	if name != Wildcard {
		out = append(out, a.acls[Resource{typ, Wildcard, PatternLiteral}]...)
	}
	for r, es := range a.acls {
		if r.Type == typ && r.Pattern == PatternPrefixed && strings.HasPrefix(name, r.Name) {
			out = append(out, es...)
		}
	}
	return out
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
