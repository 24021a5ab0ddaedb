package kafkatools

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// TestACLs: kafka-acls --add, --list and --remove (4.x and 3.9) against a
// broker running Kafka's ACL authorizer. The tools connect over PLAINTEXT
// as User:ANONYMOUS, made a super user so that they may manage ACLs.
func TestACLs(t *testing.T) {
	harness.ForEachRelease(t, brookBin, map[string]string{
		"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
		"super.users":           "User:ANONYMOUS",
	}, aclsScenario)
}

func aclsScenario(t *testing.T, env *harness.Env) {
	base := []string{"--bootstrap-server", env.Addr()}
	acls := func(args ...string) (string, string) {
		t.Helper()
		return env.Tool("kafka-acls.sh", append(base, args...)...)
	}
	acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders", "--group", "billing")
	acls("--add", "--allow-principal", "User:bob", "--operation", "Write", "--topic", "app-", "--resource-pattern-type", "prefixed")
	acls("--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.9", "--operation", "All", "--topic", "*")

	out, errOut := acls("--list")
	for _, want := range []string{
		"ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)",
		"ResourcePattern(resourceType=GROUP, name=billing, patternType=LITERAL)",
		"ResourcePattern(resourceType=TOPIC, name=app-, patternType=PREFIXED)",
		"ResourcePattern(resourceType=TOPIC, name=*, patternType=LITERAL)",
		"(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)",
		"(principal=User:bob, host=*, operation=WRITE, permissionType=ALLOW)",
		"(principal=User:mallory, host=10.0.0.9, operation=ALL, permissionType=DENY)",
	} {
		if !strings.Contains(out, want) {
			env.Errorf(out, errOut, "--list lacks %s", want)
		}
	}
	// A MATCH listing for a topic finds the prefixed and wildcard ACLs.
	out, errOut = acls("--list", "--topic", "app-1", "--resource-pattern-type", "match")
	if !strings.Contains(out, "name=app-, patternType=PREFIXED") || !strings.Contains(out, "name=*, patternType=LITERAL") || strings.Contains(out, "name=orders") {
		env.Errorf(out, errOut, "--list --resource-pattern-type match for app-1")
	}

	// franz-go sees what the tool wrote.
	cl := testutil.Client(t, env.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeACLsRequest()
	topic := "orders"
	req.ResourceType, req.ResourceName, req.ResourcePatternType = kmsg.ACLResourceTypeTopic, &topic, kmsg.ACLResourcePatternTypeLiteral
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 || len(resp.Resources) != 1 || len(resp.Resources[0].ACLs) != 1 || resp.Resources[0].ACLs[0].Principal != "User:alice" {
		t.Errorf("DescribeAcls orders: %+v %v", resp, err)
	}

	acls("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders", "--group", "billing")
	acls("--remove", "--force", "--topic", "app-", "--resource-pattern-type", "prefixed")
	out, errOut = acls("--list")
	if strings.Contains(out, "User:alice") || strings.Contains(out, "name=app-") || !strings.Contains(out, "User:mallory") {
		env.Errorf(out, errOut, "--list after --remove")
	}
}
