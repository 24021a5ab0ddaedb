package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// chaosReport is what the chaos test checked, for its log.
type chaosReport struct {
	produced, skipped, acked, failed, final, readDuringRun int
}

// verifyChaos checks the final log of each partition against what the
// writer had acknowledged and the reader had seen.
// It returns what it counted and every violation found.
func verifyChaos(topic string, partitions int32, final map[int32][]logEntry, w *chaosWriter, r *chaosReader) (chaosReport, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	var rep chaosReport
	rep.readDuringRun = r.records
	rep.skipped = w.skipped
	var violations []string
	fail := func(format string, args ...any) { violations = append(violations, fmt.Sprintf(format, args...)) }
	for _, c := range r.changed {
		fail("the concurrent reader saw a record change: %s", c)
	}
	for p := range partitions {
		rep.produced += w.produced[p] // skipped ones included
		rep.acked += len(w.acked[p])
		rep.failed += w.failed[p]
		rep.final += len(final[p])
		byOffset := map[int64]string{}
		lastSeq := -1
		for _, e := range final[p] {
			byOffset[e.offset] = e.value
			vp, seq, err := parseSeqValue([]byte(e.value))
			if err != nil || vp != p {
				fail("%s-%d offset %d: value %q does not belong here", topic, p, e.offset, e.value)
				continue
			}
			// One idempotent producer wrote seqs in order: any repeat or
			// step back is a duplicate or a reordering.
			if seq <= lastSeq {
				fail("%s-%d offset %d: seq %d after seq %d (duplicate or out of order)", topic, p, e.offset, seq, lastSeq)
			}
			lastSeq = seq
		}
		for _, off := range slices.Sorted(maps.Keys(w.acked[p])) {
			want := string(seqValue(p, w.acked[p][off]))
			if got, ok := byOffset[off]; !ok || got != want {
				fail("%s-%d: acknowledged %q at offset %d, final log has %q (present %v)", topic, p, want, off, got, ok)
			}
		}
		for _, off := range slices.Sorted(maps.Keys(r.seen[p])) {
			if got, ok := byOffset[off]; !ok || got != r.seen[p][off] {
				fail("%s-%d: the concurrent reader saw %q at offset %d, final log has %q (present %v): a committed record disappeared",
					topic, p, r.seen[p][off], off, got, ok)
			}
		}
	}
	return rep, violations
}

// reportViolations fails t with the first few violations in full and a
// count of the rest, so that a broken run stays readable.
func reportViolations(t *testing.T, violations []string) {
	t.Helper()
	const shown = 30
	for i, v := range violations {
		if i == shown {
			t.Errorf("... and %d more violations", len(violations)-shown)
			break
		}
		t.Error(v)
	}
}

// TestVerifyChaosFindsViolations feeds verifyChaos made-up runs, so that the
// chaos test is known to fail when the log loses, repeats, reorders or
// rewrites records.
func TestVerifyChaosFindsViolations(t *testing.T) {
	entry := func(off int64, seq int) logEntry { return logEntry{off, string(seqValue(0, seq))} }
	good := []logEntry{entry(0, 0), entry(1, 1), entry(2, 3), entry(3, 4)} // seq 2 failed, never written
	tests := []struct {
		name  string
		final []logEntry
		seen  map[int64]string // what the concurrent reader read
		want  string           // a substring of the one expected violation, "" for none
	}{
		{"clean run", good, map[int64]string{0: "0:0", 2: "0:3"}, ""},
		{"acknowledged record lost", good[:3], nil, `acknowledged "0:4" at offset 3`},
		{"acknowledged record replaced", []logEntry{entry(0, 0), entry(1, 1), entry(2, 3), entry(3, 5)}, nil, `acknowledged "0:4" at offset 3, final log has "0:5"`},
		{"duplicate", []logEntry{entry(0, 0), entry(1, 1), entry(2, 3), entry(3, 4), entry(4, 4)}, nil, "seq 4 after seq 4"},
		{"out of order", []logEntry{entry(0, 0), entry(1, 1), entry(2, 3), entry(3, 4), entry(4, 2)}, nil, "seq 2 after seq 4"},
		{"foreign record", []logEntry{entry(0, 0), entry(1, 1), entry(2, 3), entry(3, 4), {4, "5:7"}}, nil, `value "5:7" does not belong`},
		{"seen record disappeared", good, map[int64]string{4: "0:5"}, `saw "0:5" at offset 4`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &chaosWriter{produced: map[int32]int{0: 5}, failed: map[int32]int{0: 1},
				acked: map[int32]map[int64]int{0: {0: 0, 1: 1, 2: 3, 3: 4}}, errs: map[string]int{}}
			r := &chaosReader{seen: map[int32]map[int64]string{0: tt.seen}}
			rep, violations := verifyChaos("chaos", 1, map[int32][]logEntry{0: tt.final}, w, r)
			if rep.acked != 4 || rep.produced != 5 || rep.failed != 1 || rep.final != len(tt.final) {
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
