package config

import "fmt"

// authorizerClasses are the authorizer class names Brook implements: Kafka's
// ZooKeeper-mode AclAuthorizer under its current and its pre-2.4 name.
// KRaft's StandardAuthorizer is refused: its ACLs live in the metadata log,
// which Brook does not have.
var authorizerClasses = []string{"kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer"}

// authorizerDefs lists the configs of Kafka's AclAuthorizer.
func authorizerDefs() []Def {
	class := validator{
		check: func(v string) error {
			if v == "" {
				return nil
			}
			for _, c := range authorizerClasses {
				if v == c {
					return nil
				}
			}
			return fmt.Errorf("authorizer class %s is not supported; Brook implements %s and %s", v, authorizerClasses[0], authorizerClasses[1])
		},
		desc: "\"\", " + authorizerClasses[0] + ", " + authorizerClasses[1],
	}
	return []Def{
		b("authorizer.class.name", String, "", Low,
			"The authorizer that checks every request against the ACLs; empty, every request is allowed.",
			valid(class), brook("Only Kafka's ZooKeeper-mode ACL authorizer is implemented (under either class name), with ACLs in Kafka's ZooKeeper layout (the embedded store in single-node mode).")),
		b("super.users", String, "", Low,
			"Principals allowed every operation whatever the ACLs say, separated by semicolons (User:admin;User:broker)."),
		b("allow.everyone.if.no.acl.found", Boolean, "false", Low,
			"Whether a resource without any ACL is open to everyone; otherwise only super users may use it."),
	}
}
