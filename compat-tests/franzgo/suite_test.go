package franzgo

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

var brookBin string

func TestMain(m *testing.M) { harness.Main(m, &brookBin) }

const (
	// passTimeout bounds the run of the tests that must pass; they take
	// about a minute on 2 cores.
	passTimeout = 8 * time.Minute
	// expectedTimeout bounds the run of the expected failures: some hang
	// until the go test timeout (TestTxnEtl waits for transactions), and
	// only a pass within this time counts.
	expectedTimeout = 60 * time.Second
	// outputTail is how many output lines of a failed test the log shows.
	outputTail = 80
)

// suiteEnv is the franz-go test configuration for a single broker: KGO_TEST_RF
// and KGO_TEST_RECORDS default to 3 and 500000, which one node in CI cannot
// serve in time. Values already in the environment win, KGO_SEEDS excepted.
// The SASL tests (TestSCRAMAuth, TestSCRAMAuthBadCredentials,
// TestOAuthAuth) take the SASL listener from KGO_TEST_SCRAM_SEEDS and
// KGO_TEST_OAUTH_SEEDS and the SCRAM user from KGO_TEST_SCRAM
// (user:password:512).
func suiteEnv(env *harness.SASLEnv) []string {
	out := []string{"KGO_TEST_RF=1", "KGO_TEST_RECORDS=10000", "KGO_LOG_LEVEL=none"}
	out = append(out, os.Environ()...)
	return append(out, "KGO_SEEDS="+env.Addr(),
		"KGO_TEST_SCRAM="+harness.ScramUser+":"+harness.ScramPassword+":512",
		"KGO_TEST_SCRAM_SEEDS="+env.SASLAddr, "KGO_TEST_OAUTH_SEEDS="+env.SASLAddr)
}

func TestKgoSuite(t *testing.T) {
	runSuite(t, "kgo", "github.com/twmb/franz-go/pkg/kgo")
}

func TestKadmSuite(t *testing.T) {
	runSuite(t, "kadm", "github.com/twmb/franz-go/pkg/kadm")
}

func runSuite(t *testing.T, suite, pkg string) {
	want, err := readLists(suite)
	if err != nil {
		t.Fatal(err)
	}
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	all, err := listTests(ctx, root, pkg)
	if err != nil {
		t.Fatal(err)
	}
	if !checkClassified(t, suite, all, want) {
		t.FailNow()
	}

	env := harness.StartSASL(t, brookBin, nil)
	var passNames, expectedNames []string
	for _, name := range all {
		if want.pass[name] {
			passNames = append(passNames, name)
		} else {
			expectedNames = append(expectedNames, name)
		}
	}

	res := runTests(ctx, root, pkg, passNames, passTimeout, suiteEnv(env))
	t.Logf("%s: %d tests in %v (KGO_SEEDS=%s go test -run <%s.pass> %s)",
		suite, len(passNames), res.elapsed.Round(time.Second), env.Addr(), suite, pkg)
	var regressions []string
	for _, name := range passNames {
		o := res.tests[name]
		if o != nil && o.action == "pass" {
			continue
		}
		regressions = append(regressions, name)
		if o == nil {
			t.Errorf("%s: %s did not run", suite, name)
			continue
		}
		t.Errorf("%s: %s is in %s.pass but ended %q; its output:\n%s",
			suite, name, suite, o.action, o.tail(outputTail))
	}
	if len(regressions) > 0 {
		t.Errorf("%s: %d of %d tests that passed before fail now: %v\ngo test: %v\n%s",
			suite, len(regressions), len(passNames), regressions, res.err, tailLines(res.other, 40))
	}
	if len(expectedNames) == 0 {
		return
	}

	xres := runTests(ctx, root, pkg, expectedNames, expectedTimeout, suiteEnv(env))
	counts := map[string]int{}
	for _, name := range expectedNames {
		action := "unfinished"
		if o := xres.tests[name]; o != nil && o.action != "" {
			action = o.action
		}
		counts[action]++
		if action == "pass" {
			t.Errorf("%s: %s is in %s.expected-failures (%s) but passes now: move it to %s.pass",
				suite, name, suite, want.expected[name], suite)
		}
	}
	t.Logf("%s: passed %d of %d listed to pass; expected failures: %d (skipped by the suite %d, failed %d, unfinished after %v %d, passed %d)",
		suite, len(passNames)-len(regressions), len(passNames), len(expectedNames),
		counts["skip"], counts["fail"], expectedTimeout, counts["unfinished"], counts["pass"])
}

// checkClassified reports whether every test of the suite is in exactly one
// list and no list names a test the suite no longer has.
func checkClassified(t *testing.T, suite string, all []string, want *lists) bool {
	t.Helper()
	ok := true
	for _, name := range all {
		if !want.pass[name] && want.expected[name] == "" {
			t.Errorf("%s: %s is in neither %s.pass nor %s.expected-failures: run it and classify it", suite, name, suite, suite)
			ok = false
		}
	}
	for _, m := range []map[string]bool{want.pass, setOf(want.expected)} {
		for name := range m {
			if !slices.Contains(all, name) {
				t.Errorf("%s: listed test %s is not in the suite any more: remove it", suite, name)
				ok = false
			}
		}
	}
	return ok
}

func setOf(m map[string]string) map[string]bool {
	s := make(map[string]bool, len(m))
	for k := range m {
		s[k] = true
	}
	return s
}

func tailLines(lines []string, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
