// Package harness is what the compat-tests scenarios share: a Brook started
// for one test, and tool runs that fail the test loudly, with the tool's own
// output, the broker's log tail and the command that reruns just that
// scenario.
package harness

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
)

// logTailLines is how much of the broker log a failure message carries.
const logTailLines = 40

// Env is one Brook broker started for one test.
type Env struct {
	T     *testing.T
	Brook *testutil.Process
	// Release is whose tools the scenario runs (ForEachRelease); empty
	// means the wrappers' default, Kafka4.
	Release Release
}

// Start starts bin as a single-node broker with overrides (Kafka key names)
// and arranges for the rerun command to be printed if the test fails.
func Start(t *testing.T, bin string, overrides map[string]string) *Env {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("rerun this scenario alone: %s", RerunCommand(t))
		}
	})
	return &Env{T: t, Brook: testutil.StartBrook(t, bin, overrides)}
}

// Addr is the broker's bootstrap address.
func (e *Env) Addr() string { return e.Brook.Addr() }

// Tool runs compat-tests/bin/<name> and fails the test if it exits non-zero.
// It returns the tool's stdout and stderr.
func (e *Env) Tool(name string, args ...string) (stdout, stderr string) {
	e.T.Helper()
	return e.ToolStdin(nil, name, args...)
}

// ToolStdin is Tool with stdin fed from in. args are spelled as Kafka
// 4.x's tools take them; for an older e.Release, renamed options are
// translated (Release.Args).
func (e *Env) ToolStdin(in io.Reader, name string, args ...string) (stdout, stderr string) {
	e.T.Helper()
	stdout, stderr, err := testutil.KafkaToolStdin(e.T, in, name, e.Release.Args(name, args)...)
	if err != nil {
		e.Fatalf(stdout, stderr, "%s failed: %v", name, err)
	}
	return stdout, stderr
}

// Kcat runs kcat with stdin fed from in (nil for none) and fails the test if
// it exits non-zero.
func (e *Env) Kcat(in io.Reader, args ...string) (stdout, stderr string) {
	e.T.Helper()
	stdout, stderr, err := testutil.Kcat(e.T, in, args...)
	if err != nil {
		e.Fatalf(stdout, stderr, "kcat failed: %v", err)
	}
	return stdout, stderr
}

// Fatalf fails the test with a message, a tool's output and the broker's
// log tail.
func (e *Env) Fatalf(stdout, stderr, format string, args ...any) {
	e.T.Helper()
	e.T.Fatalf("%s\n%s", fmt.Sprintf(format, args...), e.Report(stdout, stderr))
}

// Errorf is Fatalf without stopping the test.
func (e *Env) Errorf(stdout, stderr, format string, args ...any) {
	e.T.Helper()
	e.T.Errorf("%s\n%s", fmt.Sprintf(format, args...), e.Report(stdout, stderr))
}

// Report formats a tool's output and the broker's log tail for a failure.
func (e *Env) Report(stdout, stderr string) string {
	rel := e.Release
	if rel == "" {
		rel = Kafka4
	}
	return fmt.Sprintf("--- tool stdout (%s) ---\n%s\n--- tool stderr ---\n%s\n--- brook log tail (%s) ---\n%s",
		rel.Name(), stdout, stderr, e.Brook.LogPath(), e.Brook.LogTail(logTailLines))
}

// RerunCommand is the go test command line that runs only t's scenario,
// from the module root.
func RerunCommand(t testing.TB) string {
	pkg := "."
	if root, err := testutil.ModuleRoot(); err == nil {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(root, wd); err == nil {
				pkg = "./" + filepath.ToSlash(rel)
			}
		}
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("make build && BROOK_BIN=$PWD/bin/brook go test -count=1 -v -run '%s' %s",
		strings.Join(parts, "/"), pkg)
}

// Lines splits tool output into lines, dropping the empty last one.
func Lines(out string) []string {
	out = strings.TrimSuffix(out, "\n")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// LogLines logs each non-empty line of out, prefixed by name, so that a
// tool's report stays in the test log.
func LogLines(t testing.TB, name, out string) {
	t.Helper()
	for _, l := range Lines(out) {
		if strings.TrimSpace(l) != "" {
			t.Logf("%s: %s", name, l)
		}
	}
}

// Main is a compat package's TestMain: it resolves the brook binary
// ($BROOK_BIN, or a fresh build) into *bin, runs the tests and exits.
func Main(m *testing.M, bin *string) { testutil.MainWithBrook(m, bin) }
