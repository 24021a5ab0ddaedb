package kafkapython

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// TestACLs: kafka-python's admin create_acls, describe_acls and
// delete_acls against Brook's ACL authorizer.
func TestACLs(t *testing.T) {
	env := harness.Start(t, brookBin, map[string]string{
		"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
		"super.users":           "User:ANONYMOUS",
	})
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python(t), filepath.Join("testdata", "acls.py"), env.Addr())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		env.Fatalf(stdout.String(), stderr.String(), "acls.py: %v", err)
	}
	var r struct {
		Described     []string `json:"described"`
		DescribeError string   `json:"describe_error"`
		Deleted       []string `json:"deleted"`
		After         []string `json:"after"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		env.Fatalf(stdout.String(), stderr.String(), "acls.py report: %v", err)
	}
	if want := []string{"User:alice orders READ", "User:bob app- WRITE"}; !slices.Equal(r.Described, want) {
		t.Errorf("describe_acls: %v, want %v (error %s)", r.Described, want, r.DescribeError)
	}
	if !slices.Equal(r.Deleted, []string{"User:bob"}) || !slices.Equal(r.After, []string{"User:alice"}) {
		t.Errorf("delete_acls removed %v, left %v", r.Deleted, r.After)
	}
}
