package workload

import (
	"strings"
	"testing"
)

// TestVerifyFindsViolations feeds Verify made-up runs, so that the
// chaos tests are known to fail when the log loses, repeats, reorders or
// rewrites records.
func TestVerifyFindsViolations(t *testing.T) {
	entry := func(off int64, seq int) LogEntry { return LogEntry{off, string(SeqValue(0, seq))} }
	good := []LogEntry{entry(0, 0), entry(1, 1), entry(2, 3), entry(3, 4)} // seq 2 failed, never written
	tests := []struct {
		name  string
		final []LogEntry
		seen  map[int64]string // what the concurrent reader read
		want  string           // a substring of the one expected violation, "" for none
	}{
		{"clean run", good, map[int64]string{0: "0:0", 2: "0:3"}, ""},
		{"acknowledged record lost", good[:3], nil, `acknowledged "0:4" at offset 3`},
		{"acknowledged record replaced", []LogEntry{entry(0, 0), entry(1, 1), entry(2, 3), entry(3, 5)}, nil, `acknowledged "0:4" at offset 3, final log has "0:5"`},
		{"duplicate", []LogEntry{entry(0, 0), entry(1, 1), entry(2, 3), entry(3, 4), entry(4, 4)}, nil, "seq 4 after seq 4"},
		{"out of order", []LogEntry{entry(0, 0), entry(1, 1), entry(2, 3), entry(3, 4), entry(4, 2)}, nil, "seq 2 after seq 4"},
		{"foreign record", []LogEntry{entry(0, 0), entry(1, 1), entry(2, 3), entry(3, 4), {4, "5:7"}}, nil, `value "5:7" does not belong`},
		{"seen record disappeared", good, map[int64]string{4: "0:5"}, `saw "0:5" at offset 4`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &Writer{produced: map[int32]int{0: 5}, failed: map[int32]int{0: 1},
				acked: map[int32]map[int64]int{0: {0: 0, 1: 1, 2: 3, 3: 4}}, errs: map[string]int{}}
			r := &Reader{seen: map[int32]map[int64]string{0: tt.seen}}
			rep, violations := Verify("chaos", 1, map[int32][]LogEntry{0: tt.final}, w, r)
			if rep.Acked != 4 || rep.Produced != 5 || rep.Failed != 1 || rep.Final != len(tt.final) {
				t.Errorf("report %+v", rep)
			}
			switch {
			case tt.want == "" && len(violations) > 0:
				t.Errorf("violations in a clean run: %v", violations)
			case tt.want != "" && (len(violations) != 1 || !strings.Contains(violations[0], tt.want)):
				t.Errorf("violations %v, want one containing %q", violations, tt.want)
			}
		})
	}
}
