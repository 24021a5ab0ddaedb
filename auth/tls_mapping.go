package auth

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PrincipalMapper maps the distinguished name of a client certificate to
// a user name by ssl.principal.mapping.rules, as Kafka's
// SslPrincipalMapper: rules are tried in order and the first that matches
// gives the name; DEFAULT gives the distinguished name itself.
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	isDefault bool
	// pattern is the rule's regular expression as written; whole matches
	// it anchored at both ends, as Java's Matcher.matches.
	pattern, whole *regexp.Regexp
	replacement    string
	lower, upper   bool
}

// Kafka's rule grammar, used as Kafka uses it: rulePattern splits the
// configured string into rules (a rule may hold escaped commas and
// slashes) and then parses each. Go's regexp matches leftmost-first with
// lazy quantifiers as Java's does, so the same expressions split alike.
const rulePattern = `(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
	backRefRE    = regexp.MustCompile(`\$(\d+)`)
)

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules; an empty
// string (the config unset) means DEFAULT, as Kafka.
func ParsePrincipalMappingRules(s string) (*PrincipalMapper, error) {
	if s == "" {
		s = "DEFAULT"
	}
	m := &PrincipalMapper{}
	for _, sm := range ruleSplitter.FindAllStringSubmatch(strings.TrimSpace(s), -1) {
		rule := sm[1]
		loc := ruleParser.FindStringSubmatchIndex(rule)
		if loc == nil {
			return nil, fmt.Errorf("invalid rule: %s", rule)
		}
		if loc[1] != len(rule) {
			return nil, fmt.Errorf("invalid rule: `%s`, unmatched substring: `%s`", rule, rule[loc[1]:])
		}
		group := func(i int) (string, bool) {
			if loc[2*i] < 0 {
				return "", false
			}
			return rule[loc[2*i]:loc[2*i+1]], true
		}
		if _, ok := group(1); ok {
			m.rules = append(m.rules, mappingRule{isDefault: true})
			continue
		}
		pat, ok := group(2)
		if !ok {
			continue // an empty rule is ignored
		}
		repl, _ := group(4)
		flag, _ := group(6)
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil, fmt.Errorf("invalid rule %s: %w", rule, err)
		}
		m.rules = append(m.rules, mappingRule{
			pattern: re, whole: regexp.MustCompile(`\A(?:` + pat + `)\z`),
			replacement: repl, lower: flag == "L", upper: flag == "U",
		})
	}
	return m, nil
}

// ErrNoMatchingRule is returned when no rule maps a name; Kafka then
// fails the authentication.
var ErrNoMatchingRule = errors.New("no mapping rule applies")

// Name maps a distinguished name.
func (m *PrincipalMapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		name, ok, err := r.apply(dn)
		if err != nil {
			return "", err
		}
		if ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w to %s", ErrNoMatchingRule, dn)
}

func (r mappingRule) apply(dn string) (string, bool, error) {
	if r.isDefault {
		return dn, true, nil
	}
	if !r.whole.MatchString(dn) {
		return "", false, nil
	}
	n := r.pattern.NumSubexp()
	repl := escapeLiteralBackReferences(r.replacement, n)
	var out strings.Builder
	last := 0
	for _, loc := range r.pattern.FindAllStringSubmatchIndex(dn, -1) {
		out.WriteString(dn[last:loc[0]])
		if err := appendJavaReplacement(&out, repl, dn, loc, r.pattern); err != nil {
			return "", false, err
		}
		last = loc[1]
	}
	out.WriteString(dn[last:])
	res := out.String()
	switch {
	case r.lower:
		res = strings.ToLower(res)
	case r.upper:
		res = strings.ToUpper(res)
	}
	return res, true, nil
}

// escapeLiteralBackReferences turns a back reference past the pattern's
// groups into literal text, as Kafka does before replacing: $123 with 12
// groups refers to group 12 then "3"; with fewer than 1 group it stays
// "$123". Kafka computes each insertion's place in the original text, so
// a second insertion lands one character early; that is kept, so that
// the same rule gives the same name.
func escapeLiteralBackReferences(s string, groups int) string {
	if groups == 0 {
		return s
	}
	value := s
	for _, m := range backRefRE.FindAllStringSubmatchIndex(s, -1) {
		num := s[m[2]:m[3]]
		if strings.HasPrefix(num, "0") {
			continue
		}
		idx, err := strconv.Atoi(num)
		if err != nil {
			idx = int(^uint(0) >> 1)
		}
		for idx > groups && idx >= 10 {
			idx /= 10
		}
		if idx > groups {
			at := m[2] - 1
			if at > len(value) {
				at = len(value)
			}
			value = value[:at] + `\` + value[at:]
		}
	}
	return value
}

// appendJavaReplacement writes the replacement for one match as Java's
// Matcher.appendReplacement does: \x is x, $n is group n (as many digits
// as still name a group), ${name} a named group.
func appendJavaReplacement(out *strings.Builder, repl, text string, loc []int, re *regexp.Regexp) error {
	groups := re.NumSubexp()
	for i := 0; i < len(repl); {
		c := repl[i]
		switch c {
		case '\\':
			i++
			if i == len(repl) {
				return errors.New("character to be escaped is missing")
			}
			out.WriteByte(repl[i])
			i++
		case '$':
			i++
			if i == len(repl) {
				return errors.New("illegal group reference: group index is missing")
			}
			var ref int
			if repl[i] == '{' {
				end := strings.IndexByte(repl[i:], '}')
				if end < 0 {
					return errors.New("named capturing group is missing trailing '}'")
				}
				name := repl[i+1 : i+end]
				ref = re.SubexpIndex(name)
				if ref < 0 {
					return fmt.Errorf("no group with name {%s}", name)
				}
				i += end + 1
			} else {
				if repl[i] < '0' || repl[i] > '9' {
					return errors.New("illegal group reference")
				}
				ref = int(repl[i] - '0')
				i++
				for i < len(repl) && repl[i] >= '0' && repl[i] <= '9' {
					next := ref*10 + int(repl[i]-'0')
					if next > groups {
						break
					}
					ref = next
					i++
				}
				if ref > groups {
					return fmt.Errorf("no group %d", ref)
				}
			}
			if loc[2*ref] >= 0 {
				out.WriteString(text[loc[2*ref]:loc[2*ref+1]])
			}
		default:
			out.WriteByte(c)
			i++
		}
	}
	return nil
}
