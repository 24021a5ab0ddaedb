package kafkapython

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// runSASL runs testdata/sasl.py for one mechanism against the
// SASL_PLAINTEXT listener.
func runSASL(t *testing.T, env *harness.SASLEnv, mech, password, topic string) (stdout, stderr string, err error) {
	return runSASLScript(t, env.SASLAddr, mech, password, topic)
}

// runSASLScript runs testdata/sasl.py against addr; extra is its CAFILE
// argument for SASL_SSL.
func runSASLScript(t *testing.T, addr, mech, password, topic string, extra ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	args := append([]string{filepath.Join("testdata", "sasl.py"), addr, mech, harness.UserFor(mech), password, topic}, extra...)
	cmd := exec.CommandContext(ctx, python(t), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// checkSASLReport fails the test unless sasl.py's report says it created
// topic, produced at offset 0 and read back mech's value.
func checkSASLReport(t *testing.T, env *harness.Env, out, errOut, mech, topic string) {
	t.Helper()
	var r struct {
		Topics []string `json:"topics"`
		Offset int64    `json:"offset"`
		Read   []string `json:"read"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		env.Fatalf(out, errOut, "sasl.py report: %v", err)
	}
	if !slices.Contains(r.Topics, topic) || r.Offset != 0 || len(r.Read) != 1 || r.Read[0] != "value-"+mech {
		env.Errorf(out, errOut, "sasl.py %s: report %+v", mech, r)
	}
}

// TestKafkaPythonSASL creates a topic, produces and consumes with
// kafka-python over SASL_PLAINTEXT with each mechanism, and checks that a
// wrong password is refused.
func TestKafkaPythonSASL(t *testing.T) {
	env := harness.StartSASL(t, brookBin, nil)
	for _, mech := range harness.SASLMechanisms {
		t.Run(mech, func(t *testing.T) {
			topic := "py-sasl-" + strings.ToLower(mech)
			out, errOut, err := runSASL(t, env, mech, harness.PasswordFor(mech), topic)
			if err != nil {
				env.Fatalf(out, errOut, "sasl.py %s: %v", mech, err)
			}
			checkSASLReport(t, env.Env, out, errOut, mech, topic)
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		out, errOut, err := runSASL(t, env, "SCRAM-SHA-256", "wrong", "py-sasl-wrong")
		// kafka-python reports a failed bootstrap as an incompatible
		// broker; the broker's log says why.
		if err == nil || !strings.Contains(env.Brook.LogTail(20), "SASL authentication failed") {
			env.Errorf(out, errOut, "sasl.py with a wrong password: %v, want an authentication failure", err)
		}
	})
}

// TestKafkaPythonSASLSSL is TestKafkaPythonSASL over SASL_SSL (the broker's
// certificate and host name checked) with each of
// harness.SASLSSLMechanisms.
func TestKafkaPythonSASLSSL(t *testing.T) {
	env := harness.StartSASLSSL(t, brookBin, nil)
	for _, mech := range harness.SASLSSLMechanisms() {
		t.Run(mech, func(t *testing.T) {
			topic := "py-sasl-ssl-" + strings.ToLower(mech)
			out, errOut, err := runSASLScript(t, env.SSLAddr, mech, harness.PasswordFor(mech), topic, env.CAFile)
			if err != nil {
				env.Fatalf(out, errOut, "sasl.py over SASL_SSL %s: %v", mech, err)
			}
			checkSASLReport(t, env.Env, out, errOut, mech, topic)
		})
	}
}
