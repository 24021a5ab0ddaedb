package franzgo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"
)

// event is one line of go test -json (test2json) output.
type event struct {
	Action string
	Test   string
	Output string
}

// outcome is a top-level test's result; subtests count toward their parent.
type outcome struct {
	action string   // pass, fail, skip, or "" when the run ended first
	output []string // the test's output lines, subtests included
}

// runResult is what one go test -json run produced.
type runResult struct {
	tests   map[string]*outcome
	other   []string // output not attributed to a test (build errors, panics)
	err     error    // go test's exit error, if any
	elapsed time.Duration
}

// listTests returns the top-level tests of pkg, from go test -list; fuzz
// targets count, since go test runs their seed corpus.
func listTests(ctx context.Context, dir, pkg string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-list", "^(Test|Fuzz)", pkg)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -list %s: %w\n%s", pkg, err, out)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Test") || strings.HasPrefix(line, "Fuzz") {
			names = append(names, strings.TrimSpace(line))
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("go test -list %s found no tests:\n%s", pkg, out)
	}
	return names, nil
}

// runTests runs the named top-level tests of pkg with go test -json and
// env added to the environment.
func runTests(ctx context.Context, dir, pkg string, names []string, timeout time.Duration, env []string) *runResult {
	args := []string{"test", "-json", "-count=1", "-timeout", timeout.String(),
		"-run", exactRE(names), pkg}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	err := cmd.Run()
	res := parseEvents(&out)
	res.err = err
	res.elapsed = time.Since(start)
	return res
}

// exactRE matches exactly the given top-level tests (and their subtests).
func exactRE(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}

func parseEvents(r io.Reader) *runResult {
	res := &runResult{tests: map[string]*outcome{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			res.other = append(res.other, sc.Text())
			continue
		}
		if e.Test == "" {
			if e.Action == "output" {
				res.other = append(res.other, strings.TrimRight(e.Output, "\n"))
			}
			continue
		}
		top, _, _ := strings.Cut(e.Test, "/")
		o := res.tests[top]
		if o == nil {
			o = &outcome{}
			res.tests[top] = o
		}
		switch e.Action {
		case "output":
			o.output = append(o.output, strings.TrimRight(e.Output, "\n"))
		case "pass", "fail", "skip":
			if e.Test == top {
				o.action = e.Action
			}
		}
	}
	return res
}

// names returns the tests whose outcome is action, sorted.
func (r *runResult) names(action string) []string {
	var out []string
	for name, o := range r.tests {
		if o.action == action {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// tail returns the last n output lines of a test.
func (o *outcome) tail(n int) string {
	lines := o.output
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
