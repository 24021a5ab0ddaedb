package franzgo

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReadLists(t *testing.T) {
	cases := []struct {
		name     string
		pass     string
		expected string
		wantErr  string // substring; "" for success
		wantPass []string
		wantExp  map[string]string
	}{
		{
			name:     "comments and blank lines",
			pass:     "# c\n\nTestA\n  TestB  \n",
			expected: "# c\nTestC needs transactions\n",
			wantPass: []string{"TestA", "TestB"},
			wantExp:  map[string]string{"TestC": "needs transactions"},
		},
		{name: "two names on a pass line", pass: "TestA TestB\n", wantErr: "one test name per line"},
		{name: "expected failure without reason", pass: "TestA\n", expected: "TestC\n", wantErr: "TestName reason"},
		{name: "in both lists", pass: "TestA\n", expected: "TestA flaky\n", wantErr: "in both lists"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			base := filepath.Join(dir, "s")
			if err := os.WriteFile(base+".pass", []byte(c.pass), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(base+".expected-failures", []byte(c.expected), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := readLists(base)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var pass []string
			for n := range l.pass {
				pass = append(pass, n)
			}
			slices.Sort(pass)
			if !slices.Equal(pass, c.wantPass) {
				t.Errorf("pass %v, want %v", pass, c.wantPass)
			}
			if len(l.expected) != len(c.wantExp) {
				t.Errorf("expected %v, want %v", l.expected, c.wantExp)
			}
			for k, v := range c.wantExp {
				if l.expected[k] != v {
					t.Errorf("expected[%s] = %q, want %q", k, l.expected[k], v)
				}
			}
		})
	}
}

// The lists in this directory are well formed.
func TestCommittedLists(t *testing.T) {
	for _, suite := range []string{"kgo", "kadm"} {
		if _, err := readLists(suite); err != nil {
			t.Error(err)
		}
	}
}

func TestParseEvents(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Test":"TestA"}`,
		`{"Action":"output","Test":"TestA","Output":"a says\n"}`,
		`{"Action":"run","Test":"TestA/sub"}`,
		`{"Action":"fail","Test":"TestA/sub"}`,
		`{"Action":"pass","Test":"TestA"}`,
		`{"Action":"run","Test":"TestB"}`,
		`{"Action":"skip","Test":"TestB"}`,
		`{"Action":"run","Test":"TestC"}`,
		`{"Action":"output","Output":"panic: test timed out\n"}`,
		`not json`,
	}, "\n")
	r := parseEvents(strings.NewReader(in))
	got := map[string]string{}
	for name, o := range r.tests {
		got[name] = o.action
	}
	// A subtest's result does not stand for its parent; an unfinished test
	// has no action.
	want := map[string]string{"TestA": "pass", "TestB": "skip", "TestC": ""}
	if len(got) != len(want) {
		t.Fatalf("tests %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	if o := r.tests["TestA"]; o.tail(10) != "a says" {
		t.Errorf("TestA output %q", o.tail(10))
	}
	if !slices.Equal(r.other, []string{"panic: test timed out", "not json"}) {
		t.Errorf("other output %q", r.other)
	}
	if !slices.Equal(r.names("pass"), []string{"TestA"}) {
		t.Errorf("names(pass) = %v", r.names("pass"))
	}
}

func TestExactRE(t *testing.T) {
	if got := exactRE([]string{"TestA", "Test.B"}); got != `^(TestA|Test\.B)$` {
		t.Errorf("exactRE = %s", got)
	}
}
