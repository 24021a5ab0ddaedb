// Package auth holds what Brook knows of who is on a connection: the
// principal that authentication (TLS client certificates, SASL) attaches
// to it, and that the authorizer checks.
package auth

// Principal is a Kafka principal, shown as Type:Name ("User:alice").
// Kafka's principal type is always "User" for principals it builds
// itself; the type is kept so that ACLs written for other types compare
// as Kafka compares them.
type Principal struct {
	Type string
	Name string
}

// UserType is the principal type of every principal Kafka's default
// principal builder creates.
const UserType = "User"

// Anonymous is the principal of a connection that did not authenticate
// (a PLAINTEXT listener, or TLS without a client certificate), as Kafka's
// KafkaPrincipal.ANONYMOUS.
var Anonymous = Principal{Type: UserType, Name: "ANONYMOUS"}

// User is the principal of an authenticated user name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

// String is Kafka's form, Type:Name.
func (p Principal) String() string { return p.Type + ":" + p.Name }
