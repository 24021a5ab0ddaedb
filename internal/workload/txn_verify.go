package workload

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// TxnOutcome is what a transactional producer learned of one transaction.
type TxnOutcome int

const (
	// TxnAborted: the producer never asked to commit it (it aborted, or a
	// produce or the abort failed first). Only EndTxn(commit) commits, so
	// none of its records may ever be read_committed.
	TxnAborted TxnOutcome = iota
	// TxnCommitted: EndTxn(commit) was acknowledged; every record must be
	// read exactly once.
	TxnCommitted
	// TxnUnknown: EndTxn(commit) was sent and failed, so the producer does
	// not know; the records must be read all or none.
	TxnUnknown
)

func (o TxnOutcome) String() string {
	switch o {
	case TxnCommitted:
		return "committed"
	case TxnUnknown:
		return "unknown (commit failed)"
	}
	return "aborted"
}

// TxnKey names one transaction: producer number and transaction number
// (counted by the producer across its clients).
type TxnKey struct{ Producer, Txn int }

func (k TxnKey) String() string { return fmt.Sprintf("producer %d transaction %d", k.Producer, k.Txn) }

// TxnInfo is what the test sent in one transaction: the partition of each
// record (by index) and what it learned of the outcome.
type TxnInfo struct {
	Partitions []int32
	Outcome    TxnOutcome
}

// TxnValue is record rec of a transaction of n records:
// "producer:txn:rec/n".
func TxnValue(k TxnKey, rec, n int) []byte {
	return fmt.Appendf(nil, "%d:%d:%d/%d", k.Producer, k.Txn, rec, n)
}

func ParseTxnValue(v []byte) (k TxnKey, rec, n int, err error) {
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
	return TxnKey{nums[0], nums[1]}, nums[2], nums[3], nil
}

// TxnReport is what VerifyTxn checked, for the test's log.
type TxnReport struct {
	Committed, Aborted, Unknown, UnknownSeen int
	Final, ReadDuringRun                     int
}

// VerifyTxn checks the final read_committed log of each partition
// (data records only, in offset order) and what a concurrent
// read_committed reader saw during the run against the transactions sent:
//   - every record belongs to a transaction of the test, on the partition
//     it was sent to, and no record is read twice;
//   - within a partition a transaction's records are in the order sent;
//   - a committed transaction is read whole, an aborted one not at all,
//     one of unknown outcome whole or not at all (never partially);
//   - nothing the concurrent reader saw is of an aborted transaction, or
//     missing or changed in the final log.
func VerifyTxn(topic string, txns map[TxnKey]TxnInfo, final map[int32][]LogEntry, seen map[int32]map[int64]string) (TxnReport, []string) {
	var rep TxnReport
	var violations []string
	fail := func(format string, args ...any) { violations = append(violations, fmt.Sprintf(format, args...)) }

	read := map[TxnKey]map[int]int{} // record index -> times read
	for _, p := range slices.Sorted(maps.Keys(final)) {
		last := map[TxnKey]int{} // last record index read on p
		for _, e := range final[p] {
			rep.Final++
			k, rec, n, err := ParseTxnValue([]byte(e.Value))
			info, ok := txns[k]
			switch {
			case err != nil || !ok || n != len(info.Partitions) || rec < 0 || rec >= n:
				fail("%s-%d offset %d: value %q is no record the test sent", topic, p, e.Offset, e.Value)
				continue
			case info.Partitions[rec] != p:
				fail("%s-%d offset %d: %v record %d was sent to partition %d", topic, p, e.Offset, k, rec, info.Partitions[rec])
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
		n := len(info.Partitions)
		switch info.Outcome {
		case TxnCommitted:
			rep.Committed++
			if got != n {
				fail("%v: commit acknowledged, final log has %d of its %d records (missing %v)", k, got, n, missingRecords(read[k], n))
			}
		case TxnAborted:
			rep.Aborted++
			if got > 0 {
				fail("%v: never committed, yet read_committed reads %d of its %d records", k, got, n)
			}
		case TxnUnknown:
			rep.Unknown++
			if got > 0 {
				rep.UnknownSeen++
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
			rep.ReadDuringRun++
			v := seen[p][off]
			if k, _, _, err := ParseTxnValue([]byte(v)); err == nil {
				if info, ok := txns[k]; ok && info.Outcome == TxnAborted {
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

func compareTxnKeys(a, b TxnKey) int {
	if a.Producer != b.Producer {
		return a.Producer - b.Producer
	}
	return a.Txn - b.Txn
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
