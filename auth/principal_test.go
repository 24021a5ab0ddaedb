package auth

import "testing"

func TestPrincipalString(t *testing.T) {
	for _, c := range []struct {
		p    Principal
		want string
	}{
		{Anonymous, "User:ANONYMOUS"},
		{User("alice"), "User:alice"},
		{Principal{Type: "Group", Name: "ops"}, "Group:ops"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("%#v: %q, want %q", c.p, got, c.want)
		}
	}
}
