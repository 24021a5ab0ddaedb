package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/brook-mq/brook/internal/workload"
)

// txnOutcome is what a transactional producer learned of one transaction.
type txnOutcome int

const (
	// txnAborted: the producer never asked to commit it (it aborted, or a
	// produce or the abort failed first). Only EndTxn(commit) commits, so
	// none of its records may ever be read_committed.
	txnAborted txnOutcome = iota
	// txnCommitted: EndTxn(commit) was acknowledged; every record must be
	// read exactly once.
	txnCommitted
	// txnUnknown: EndTxn(commit) was sent and failed, so the producer does
	// not know; the records must be read all or none.
	txnUnknown
)

func (o txnOutcome) String() string {
	switch o {
	case txnCommitted:
		return "committed"
	case txnUnknown:
		return "unknown (commit failed)"
	}
	return "aborted"
}

// txnKey names one transaction: producer number and transaction number
// (counted by the producer across its clients).
type txnKey struct{ producer, txn int }

func (k txnKey) String() string { return fmt.Sprintf("producer %d transaction %d", k.producer, k.txn) }

// txnInfo is what the test sent in one transaction: the partition of each
// record (by index) and what it learned of the outcome.
type txnInfo struct {
	partitions []int32
	outcome    txnOutcome
}

// txnValue is record rec of a transaction of n records:
// "producer:txn:rec/n".
func txnValue(k txnKey, rec, n int) []byte {
	return fmt.Appendf(nil, "%d:%d:%d/%d", k.producer, k.txn, rec, n)
}

func parseTxnValue(v []byte) (k txnKey, rec, n int, err error) {
	head, tail, ok := strings.Cut(string(v), "/")
	parts := strings.Split(head, ":")
	if !ok || len(parts) != 3 {
		return k, 0, 0, fmt.Errorf("value %q: want producer:txn:rec/n", v)
	}
	var nums [4]int
	for i, s := range append(parts, tail) {
		if nums[i], err = strconv.Atoi(s); err != nil {
			return k, 0, 0, fmt.Errorf("value %q: %w", v, err)
		}
	}
	return txnKey{nums[0], nums[1]}, nums[2], nums[3], nil
}

// txnChaosReport is what the transactional chaos test checked, for its log.
type txnChaosReport struct {
	committed, aborted, unknown, unknownSeen int
	final, readDuringRun                     int
}

// verifyTxnChaos checks the final read_committed log of each partition
// (data records only, in offset order) and what a concurrent
// read_committed reader saw during the run against the transactions sent:
//   - every record belongs to a transaction of the test, on the partition
//     it was sent to, and no record is read twice;
//   - within a partition a transaction's records are in the order sent;
//   - a committed transaction is read whole, an aborted one not at all,
//     one of unknown outcome whole or not at all (never partially);
//   - nothing the concurrent reader saw is of an aborted transaction, or
//     missing or changed in the final log.
func verifyTxnChaos(topic string, txns map[txnKey]txnInfo, final map[int32][]workload.LogEntry, seen map[int32]map[int64]string) (txnChaosReport, []string) {
	var rep txnChaosReport
	var violations []string
	fail := func(format string, args ...any) { violations = append(violations, fmt.Sprintf(format, args...)) }

	read := map[txnKey]map[int]int{} // record index -> times read
	for _, p := range slices.Sorted(maps.Keys(final)) {
		last := map[txnKey]int{} // last record index read on p
		for _, e := range final[p] {
			rep.final++
			k, rec, n, err := parseTxnValue([]byte(e.Value))
			info, ok := txns[k]
			switch {
			case err != nil || !ok || n != len(info.partitions) || rec < 0 || rec >= n:
				fail("%s-%d offset %d: value %q is no record the test sent", topic, p, e.Offset, e.Value)
				continue
			case info.partitions[rec] != p:
				fail("%s-%d offset %d: %v record %d was sent to partition %d", topic, p, e.Offset, k, rec, info.partitions[rec])
				continue
			}
			if read[k] == nil {
				read[k] = map[int]int{}
			}
			read[k][rec]++
			if read[k][rec] == 2 {
				fail("%s-%d offset %d: %v record %d read twice", topic, p, e.Offset, k, rec)
			}
			if l, ok := last[k]; ok && rec < l {
				fail("%s-%d offset %d: %v record %d after its record %d (out of order)", topic, p, e.Offset, k, rec, l)
			}
			last[k] = rec
		}
	}

	for _, k := range slices.SortedFunc(maps.Keys(txns), compareTxnKeys) {
		info := txns[k]
		got := len(read[k])
		n := len(info.partitions)
		switch info.outcome {
		case txnCommitted:
			rep.committed++
			if got != n {
				fail("%v: commit acknowledged, final log has %d of its %d records (missing %v)", k, got, n, missingRecords(read[k], n))
			}
		case txnAborted:
			rep.aborted++
			if got > 0 {
				fail("%v: never committed, yet read_committed reads %d of its %d records", k, got, n)
			}
		case txnUnknown:
			rep.unknown++
			if got > 0 {
				rep.unknownSeen++
			}
			if got > 0 && got != n {
				fail("%v: outcome unknown, final log has %d of its %d records, a partial transaction (missing %v)", k, got, n, missingRecords(read[k], n))
			}
		}
	}

	for _, p := range slices.Sorted(maps.Keys(seen)) {
		byOffset := map[int64]string{}
		for _, e := range final[p] {
			byOffset[e.Offset] = e.Value
		}
		for _, off := range slices.Sorted(maps.Keys(seen[p])) {
			rep.readDuringRun++
			v := seen[p][off]
			if k, _, _, err := parseTxnValue([]byte(v)); err == nil {
				if info, ok := txns[k]; ok && info.outcome == txnAborted {
					fail("%s-%d offset %d: the concurrent read_committed reader saw %q of %v, never committed", topic, p, off, v, k)
					continue
				}
			}
			if got, ok := byOffset[off]; !ok || got != v {
				fail("%s-%d: the concurrent reader saw %q at offset %d, final log has %q (present %v): a committed record disappeared or changed",
					topic, p, v, off, got, ok)
			}
		}
	}
	return rep, violations
}

func compareTxnKeys(a, b txnKey) int {
	if a.producer != b.producer {
		return a.producer - b.producer
	}
	return a.txn - b.txn
}

func missingRecords(read map[int]int, n int) []int {
	var out []int
	for i := range n {
		if read[i] == 0 {
			out = append(out, i)
		}
	}
	return out
}

// TestVerifyTxnChaosFindsViolations feeds verifyTxnChaos made-up runs, so
// that the transactional chaos test is known to fail when read_committed
// shows an aborted or partial transaction, loses or repeats a committed
// record, or misplaces one.
func TestVerifyTxnChaosFindsViolations(t *testing.T) {
	committed := txnKey{0, 1}  // records 0, 1 on partition 0, record 2 on 1
	aborted := txnKey{0, 2}    // record 0 on partition 0, record 1 on 1
	unknownIn := txnKey{1, 1}  // unknown, committed in fact: record 0 on 0, 1 on 1
	unknownOut := txnKey{1, 2} // unknown, aborted in fact: record 0 on 1
	txns := map[txnKey]txnInfo{
		committed:  {[]int32{0, 0, 1}, txnCommitted},
		aborted:    {[]int32{0, 1}, txnAborted},
		unknownIn:  {[]int32{0, 1}, txnUnknown},
		unknownOut: {[]int32{1}, txnUnknown},
	}
	e := func(off int64, k txnKey, rec int) workload.LogEntry {
		return workload.LogEntry{Offset: off, Value: string(txnValue(k, rec, len(txns[k].partitions)))}
	}
	// Offsets skip the aborted records and the markers, as read_committed does.
	p0 := []workload.LogEntry{e(0, committed, 0), e(1, committed, 1), e(5, unknownIn, 0)}
	p1 := []workload.LogEntry{e(1, committed, 2), e(4, unknownIn, 1)}
	with := func(p int32, entries ...workload.LogEntry) map[int32][]workload.LogEntry {
		out := map[int32][]workload.LogEntry{0: slices.Clone(p0), 1: slices.Clone(p1)}
		out[p] = append(out[p], entries...)
		return out
	}
	clean := with(0)
	tests := []struct {
		name  string
		final map[int32][]workload.LogEntry
		seen  map[int32]map[int64]string // what the concurrent reader read
		want  string                     // a substring of the one expected violation, "" for none
	}{
		{"clean run", clean, map[int32]map[int64]string{0: {1: p0[1].Value}, 1: {4: p1[1].Value}}, ""},
		{"clean run, unknown outcomes both ways", clean, nil, ""},
		{"committed record lost", map[int32][]workload.LogEntry{0: p0, 1: p1[1:]}, nil, "producer 0 transaction 1: commit acknowledged, final log has 2 of its 3 records (missing [2])"},
		{"committed transaction lost whole", map[int32][]workload.LogEntry{0: p0[2:], 1: p1[1:]}, nil, "final log has 0 of its 3 records"},
		{"aborted record visible", with(1, e(7, aborted, 1)), nil, "producer 0 transaction 2: never committed, yet read_committed reads 1 of its 2 records"},
		{"partial transaction of unknown outcome", map[int32][]workload.LogEntry{0: p0, 1: p1[:1]}, nil,
			"producer 1 transaction 1: outcome unknown, final log has 1 of its 2 records, a partial transaction (missing [1])"},
		{"committed record read twice", with(0, e(9, committed, 1)), nil, "offset 9: producer 0 transaction 1 record 1 read twice"},
		{"out of order in a partition", map[int32][]workload.LogEntry{0: {p0[1], p0[0], p0[2]}, 1: p1}, nil, "record 0 after its record 1 (out of order)"},
		{"record on the wrong partition", with(1, e(8, unknownOut, 0), e(9, committed, 0)), nil, "offset 9: producer 0 transaction 1 record 0 was sent to partition 0"},
		{"foreign record", with(1, workload.LogEntry{Offset: 9, Value: "7:7:0/1"}), nil, `value "7:7:0/1" is no record the test sent`},
		{"concurrent reader saw an aborted record", clean, map[int32]map[int64]string{1: {2: string(txnValue(aborted, 1, 2))}},
			`concurrent read_committed reader saw "0:2:1/2" of producer 0 transaction 2, never committed`},
		{"record seen during the run disappeared", clean, map[int32]map[int64]string{1: {6: string(txnValue(unknownOut, 0, 1))}},
			`the concurrent reader saw "1:2:0/1" at offset 6, final log has "" (present false)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, violations := verifyTxnChaos("chaos-txn", txns, tt.final, tt.seen)
			if rep.committed != 1 || rep.aborted != 1 || rep.unknown != 2 {
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
