package workload

import (
	"slices"
	"strings"
	"testing"
)

// TestVerifyTxnFindsViolations feeds VerifyTxn made-up runs, so
// that a transactional test is known to fail when read_committed
// shows an aborted or partial transaction, loses or repeats a committed
// record, or misplaces one.
func TestVerifyTxnFindsViolations(t *testing.T) {
	committed := TxnKey{0, 1}  // records 0, 1 on partition 0, record 2 on 1
	aborted := TxnKey{0, 2}    // record 0 on partition 0, record 1 on 1
	unknownIn := TxnKey{1, 1}  // unknown, committed in fact: record 0 on 0, 1 on 1
	unknownOut := TxnKey{1, 2} // unknown, aborted in fact: record 0 on 1
	txns := map[TxnKey]TxnInfo{
		committed:  {[]int32{0, 0, 1}, TxnCommitted},
		aborted:    {[]int32{0, 1}, TxnAborted},
		unknownIn:  {[]int32{0, 1}, TxnUnknown},
		unknownOut: {[]int32{1}, TxnUnknown},
	}
	e := func(off int64, k TxnKey, rec int) LogEntry {
		return LogEntry{Offset: off, Value: string(TxnValue(k, rec, len(txns[k].Partitions)))}
	}
	// Offsets skip the aborted records and the markers, as read_committed does.
	p0 := []LogEntry{e(0, committed, 0), e(1, committed, 1), e(5, unknownIn, 0)}
	p1 := []LogEntry{e(1, committed, 2), e(4, unknownIn, 1)}
	with := func(p int32, entries ...LogEntry) map[int32][]LogEntry {
		out := map[int32][]LogEntry{0: slices.Clone(p0), 1: slices.Clone(p1)}
		out[p] = append(out[p], entries...)
		return out
	}
	clean := with(0)
	tests := []struct {
		name  string
		final map[int32][]LogEntry
		seen  map[int32]map[int64]string // what the concurrent reader read
		want  string                     // a substring of the one expected violation, "" for none
	}{
		{"clean run", clean, map[int32]map[int64]string{0: {1: p0[1].Value}, 1: {4: p1[1].Value}}, ""},
		{"clean run, unknown outcomes both ways", clean, nil, ""},
		{"committed record lost", map[int32][]LogEntry{0: p0, 1: p1[1:]}, nil, "producer 0 transaction 1: commit acknowledged, final log has 2 of its 3 records (missing [2])"},
		{"committed transaction lost whole", map[int32][]LogEntry{0: p0[2:], 1: p1[1:]}, nil, "final log has 0 of its 3 records"},
		{"aborted record visible", with(1, e(7, aborted, 1)), nil, "producer 0 transaction 2: never committed, yet read_committed reads 1 of its 2 records"},
		{"partial transaction of unknown outcome", map[int32][]LogEntry{0: p0, 1: p1[:1]}, nil,
			"producer 1 transaction 1: outcome unknown, final log has 1 of its 2 records, a partial transaction (missing [1])"},
		{"committed record read twice", with(0, e(9, committed, 1)), nil, "offset 9: producer 0 transaction 1 record 1 read twice"},
		{"out of order in a partition", map[int32][]LogEntry{0: {p0[1], p0[0], p0[2]}, 1: p1}, nil, "record 0 after its record 1 (out of order)"},
		{"record on the wrong partition", with(1, e(8, unknownOut, 0), e(9, committed, 0)), nil, "offset 9: producer 0 transaction 1 record 0 was sent to partition 0"},
		{"foreign record", with(1, LogEntry{Offset: 9, Value: "7:7:0/1"}), nil, `value "7:7:0/1" is no record the test sent`},
		{"concurrent reader saw an aborted record", clean, map[int32]map[int64]string{1: {2: string(TxnValue(aborted, 1, 2))}},
			`concurrent read_committed reader saw "0:2:1/2" of producer 0 transaction 2, never committed`},
		{"record seen during the run disappeared", clean, map[int32]map[int64]string{1: {6: string(TxnValue(unknownOut, 0, 1))}},
			`the concurrent reader saw "1:2:0/1" at offset 6, final log has "" (present false)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, violations := VerifyTxn("chaos-txn", txns, tt.final, tt.seen)
			if rep.Committed != 1 || rep.Aborted != 1 || rep.Unknown != 2 {
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
