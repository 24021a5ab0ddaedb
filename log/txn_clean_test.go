package log

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/brook-mq/brook/protocol/batch"
)

// appendTxnKVs appends one transactional batch of producer pid.
func appendTxnKVs(t testing.TB, l *Log, pid int64, seq int32, recs ...kv) AppendInfo {
	t.Helper()
	out := make([]batch.Record, len(recs))
	for i, r := range recs {
		out[i] = batch.Record{OffsetDelta: int32(i), Key: []byte(r.key), Value: []byte(r.value)}
	}
	b, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: l.now().UnixMilli(), Transactional: true,
		Producer: &batch.Producer{ID: pid, Epoch: 0, BaseSequence: seq}}, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := l.Append(b, 0)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	return info
}

// TestCleanerTransactions: compaction of a transactional log, as Kafka's
// cleaner: the records of aborted transactions neither shadow an older
// committed value of their key nor survive; markers stay, with the
// .txnindex entries of their segments; nothing at or past the last stable
// offset (an open transaction) is cleaned.
func TestCleanerTransactions(t *testing.T) {
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), compactConfig(), newManualClock(), Options{})
	defer l.Close()
	aborted, open := writeTxnCompactLog(t, l)
	cleanNow(t, l, 1<<20)
	if cp := l.CleanerCheckpoint(); cp <= 0 || cp > open {
		t.Fatalf("cleaner checkpoint %d, want within (0, %d]: the open transaction bounds cleaning", cp, open)
	}
	checkCleanedTxns(t, l, aborted, true)
}

// TestCleanerTransactionsCrashAtEachStep interrupts the cleaning of a
// transactional log at each step of its swap: recovery keeps the aborted
// transactions and their .txnindex, and no aborted record comes back.
func TestCleanerTransactionsCrashAtEachStep(t *testing.T) {
	for _, step := range []string{"cleaned", "swap", "deleted-0", "done"} {
		t.Run(step, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t-0")
			clock := newManualClock()
			l := openTestLog(t, dir, compactConfig(), clock, Options{})
			aborted, _ := writeTxnCompactLog(t, l)
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			l.cleanHook = func(s string) error {
				if s == step {
					return errCrash
				}
				return nil
			}
			if _, err := cleanWith(l, newOffsetMap(1<<20, 0.9)); !errors.Is(err, errCrash) {
				t.Fatalf("clean: %v, want the simulated crash", err)
			}
			l.bg.Wait()
			l.release()
			l = openTestLog(t, dir, compactConfig(), clock, Options{RecoveryPoint: math.MaxInt64})
			defer l.Close()
			l.SetHighWatermark(l.LogEndOffset())
			// The interrupted cleaning may not have reached the aborted
			// records; the next one does.
			checkCleanedTxns(t, l, aborted, false)
			cleanNow(t, l, 1<<20)
			checkCleanedTxns(t, l, aborted, true)
		})
	}
}

// writeTxnCompactLog writes a committed transaction on key k, then an
// aborted one on k and k2, then an open one, with plain records between
// so that the log has several segments; it returns the aborted
// transactions and the open transaction's first offset.
func writeTxnCompactLog(t *testing.T, l *Log) ([]AbortedTxn, int64) {
	t.Helper()
	filler := func(round int) {
		for i := range 8 {
			appendKVs(t, l, l.now().UnixMilli(), batch.None, kv{key: fmt.Sprintf("f%d", i), value: fmt.Sprintf("%d-%0200d", round, i)})
		}
	}
	appendTxnKVs(t, l, 1, 0, kv{key: "k", value: "good"})
	mustOp(t, l, markerOp(1, 0, 0, true))
	filler(0)
	appendTxnKVs(t, l, 2, 0, kv{key: "k", value: "bad"}, kv{key: "k2", value: "bad"})
	filler(1)
	mustOp(t, l, markerOp(2, 0, 0, false))
	filler(2)
	open := appendTxnKVs(t, l, 3, 0, kv{key: "k3", value: "open"})
	filler(3)
	l.SetHighWatermark(l.LogEndOffset())
	aborted := l.AbortedTransactions(0, l.LogEndOffset())
	if len(aborted) != 1 || l.NumSegments() < 4 {
		t.Fatalf("setup: aborted %+v, %d segments", aborted, l.NumSegments())
	}
	return aborted, open.FirstOffset
}

// checkCleanedTxns checks a transactional log from writeTxnCompactLog: the
// committed value, both markers and the aborted transactions (in memory
// and in the .txnindex files) are there, and, once cleaned, no aborted
// record.
func checkCleanedTxns(t *testing.T, l *Log, aborted []AbortedTxn, cleaned bool) {
	t.Helper()
	var good, bad, markers int
	for _, r := range readAllRecords(t, l) {
		switch {
		case r.value == "bad":
			bad++
		case r.key == "k" && r.value == "good":
			good++
		case len(r.key) == 4 && r.key[:3] == "\x00\x00\x00":
			markers++
		}
	}
	if good != 1 || markers != 2 || (cleaned && bad > 0) {
		t.Fatalf("cleaned %v: %d committed k=good (want 1), %d markers (want 2), %d aborted records", cleaned, good, markers, bad)
	}
	if got := l.AbortedTransactions(0, l.LogEndOffset()); fmt.Sprint(got) != fmt.Sprint(aborted) {
		t.Fatalf("aborted after cleaning %+v, want %+v", got, aborted)
	}
	if got := readTxnIndexes(t, l.Dir()); fmt.Sprint(got) != fmt.Sprint(aborted) {
		t.Fatalf(".txnindex files after cleaning %+v, want %+v", got, aborted)
	}
}
