package auth

import "strings"

// Filter selects bindings as Kafka's AclBindingFilter does, for
// DescribeAcls and DeleteAcls. A nil name, principal or host matches
// every one; ResourceAny, PatternAny, OpAny and PermAny match every value.
// PatternMatch selects the patterns that apply to the name: its literal
// ACLs, the literal "*" ACLs and the prefixed ACLs that begin it.
type Filter struct {
	Type       ResourceType
	Name       *string
	Pattern    PatternType
	Principal  *string
	Host       *string
	Operation  Operation
	Permission Permission
}

// MatchesResource reports whether the filter's resource part selects r.
func (f Filter) MatchesResource(r Resource) bool {
	if f.Type != ResourceAny && f.Type != r.Type {
		return false
	}
	switch f.Pattern {
	case PatternAny:
		return f.Name == nil || *f.Name == r.Name
	case PatternMatch:
		if f.Name == nil {
			return true
		}
		switch r.Pattern {
		case PatternLiteral:
			return r.Name == *f.Name || r.Name == Wildcard
		case PatternPrefixed:
			return strings.HasPrefix(*f.Name, r.Name)
		}
		return false
	default:
		return f.Pattern == r.Pattern && (f.Name == nil || *f.Name == r.Name)
	}
}

// MatchesEntry reports whether the filter's entry part selects e.
func (f Filter) MatchesEntry(e Entry) bool {
	return (f.Principal == nil || *f.Principal == e.Principal) &&
		(f.Host == nil || *f.Host == e.Host) &&
		(f.Operation == OpAny || f.Operation == e.Operation) &&
		(f.Permission == PermAny || f.Permission == e.Permission)
}

// Matching returns every binding the filter selects.
func (a *Authorizer) Matching(f Filter) []Binding {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []Binding
	for r, es := range a.acls {
		if !f.MatchesResource(r) {
			continue
		}
		for _, e := range es {
			if f.MatchesEntry(e) {
				out = append(out, Binding{r, e})
			}
		}
	}
	return out
}
