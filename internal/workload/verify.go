package workload

import (
	"fmt"
	"maps"
	"slices"
	"testing"
)

// Report is what Verify counted, for the test's log.
type Report struct {
	Produced, Skipped, Acked, Failed, Final, ReadDuringRun int
}

// Verify checks the final log of each partition against what the
// writer had acknowledged and the reader had seen.
// It returns what it counted and every violation found.
func Verify(topic string, partitions int32, final map[int32][]LogEntry, w *Writer, r *Reader) (Report, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	var rep Report
	rep.ReadDuringRun = r.records
	rep.Skipped = w.skipped
	var violations []string
	fail := func(format string, args ...any) { violations = append(violations, fmt.Sprintf(format, args...)) }
	for _, c := range r.changed {
		fail("the concurrent reader saw a record change: %s", c)
	}
	for p := range partitions {
		rep.Produced += w.produced[p] // skipped ones included
		rep.Acked += len(w.acked[p])
		rep.Failed += w.failed[p]
		rep.Final += len(final[p])
		byOffset := map[int64]string{}
		lastSeq := -1
		for _, e := range final[p] {
			byOffset[e.Offset] = e.Value
			vp, seq, err := ParseSeqValue([]byte(e.Value))
			if err != nil || vp != p {
				fail("%s-%d offset %d: value %q does not belong here", topic, p, e.Offset, e.Value)
				continue
			}
			// One idempotent producer wrote seqs in order: any repeat or
			// step back is a duplicate or a reordering.
			if seq <= lastSeq {
				fail("%s-%d offset %d: seq %d after seq %d (duplicate or out of order)", topic, p, e.Offset, seq, lastSeq)
			}
			lastSeq = seq
		}
		for _, off := range slices.Sorted(maps.Keys(w.acked[p])) {
			want := string(SeqValue(p, w.acked[p][off]))
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

// ReportViolations fails t with the first few violations in full and a
// count of the rest, so that a broken run stays readable.
func ReportViolations(t testing.TB, violations []string) {
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
