// Package franzgo runs franz-go's own test suites (pkg/kgo and pkg/kadm,
// from the Go module cache at the version in go.mod) against a Brook
// broker and compares the results with the lists kept beside this file:
//
//   - <suite>.pass: tests that pass against Brook; one that fails fails CI;
//   - <suite>.expected-failures: "TestName  reason" lines, for tests that
//     need a feature Brook does not have yet. This list may only shrink: a
//     listed test that passes fails CI until it moves to <suite>.pass.
//
// Every test the suite holds must be in exactly one list, so a franz-go
// upgrade that adds tests fails until they are classified.
package franzgo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// lists is the expected outcome of one suite.
type lists struct {
	pass     map[string]bool
	expected map[string]string // test name -> why it cannot pass yet
}

// readLists loads <suite>.pass and <suite>.expected-failures. Blank lines
// and lines starting with # are comments.
func readLists(suite string) (*lists, error) {
	l := &lists{pass: map[string]bool{}, expected: map[string]string{}}
	err := eachLine(suite+".pass", func(line string) error {
		if strings.ContainsAny(line, " \t") {
			return fmt.Errorf("want one test name per line, got %q", line)
		}
		l.pass[line] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(suite+".expected-failures", func(line string) error {
		name, reason, ok := strings.Cut(line, " ")
		reason = strings.TrimSpace(reason)
		if !ok || reason == "" {
			return fmt.Errorf("want \"TestName reason\", got %q", line)
		}
		if l.pass[name] {
			return fmt.Errorf("%s is in both lists", name)
		}
		l.expected[name] = reason
		return nil
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

func eachLine(path string, fn func(string) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read test list: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}
