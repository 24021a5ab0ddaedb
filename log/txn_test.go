package log

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/brook-mq/brook/protocol/batch"
)

// txnOp is one step against a log: a data batch or a marker.
type txnOp struct {
	pid    int64
	epoch  int16
	seq    int32 // data only
	n      int   // data only: records
	txn    bool  // data: transactional
	marker bool
	commit bool  // marker
	coord  int32 // marker: coordinator epoch
	tv     int8  // marker: transaction version
}

func dataOp(pid int64, epoch int16, seq int32, n int, txn bool) txnOp {
	return txnOp{pid: pid, epoch: epoch, seq: seq, n: n, txn: txn}
}

func markerOp(pid int64, epoch int16, coord int32, commit bool) txnOp {
	return txnOp{pid: pid, epoch: epoch, marker: true, commit: commit, coord: coord}
}

// markerV2Op is a marker of a transaction version 2 coordinator, whose
// epoch is one above the transaction's.
func markerV2Op(pid int64, epoch int16, commit bool) txnOp {
	return txnOp{pid: pid, epoch: epoch, marker: true, commit: commit, tv: 2}
}

// apply runs op as the leader would and returns what Append returned.
func (op txnOp) apply(l *Log) (AppendInfo, error) {
	ts := l.now().UnixMilli()
	if op.marker {
		return l.AppendTxnMarker(TxnMarker{ProducerID: op.pid, ProducerEpoch: op.epoch, CoordinatorEpoch: op.coord, Commit: op.commit, TransactionVersion: op.tv}, 0)
	}
	spec := batchSpec{baseTimestamp: ts, producerID: op.pid, producerEpoch: op.epoch, baseSequence: op.seq}
	if op.pid < 0 {
		spec = plainSpec(ts)
	}
	if op.txn {
		spec.attributes = batch.TransactionalBit
	}
	return l.Append(buildBatch(spec, nRecords(op.n, 8)), 0)
}

// TestTxnProducerStateTransitions drives the producer state through
// Kafka's transaction rules, with the high watermark at the log end
// offset after each step, and checks errors, the last stable offset and
// the aborted transactions recorded.
func TestTxnProducerStateTransitions(t *testing.T) {
	type step struct {
		op      txnOp
		wantErr error
		wantLSO int64
	}
	cases := []struct {
		name    string
		steps   []step
		aborted []AbortedTxn
	}{
		{"transactional batch opens, commit closes", []step{
			{dataOp(1, 0, 0, 2, true), nil, 0},
			{dataOp(1, 0, 2, 3, true), nil, 0},
			{markerOp(1, 0, 0, true), nil, 6},
		}, nil},
		{"abort is indexed with the log's last stable offset", []step{
			{dataOp(-1, -1, -1, 2, false), nil, 2},
			{dataOp(1, 0, 0, 2, true), nil, 2},
			{markerOp(1, 0, 0, false), nil, 5},
		}, []AbortedTxn{{1, 2, 4, 5}}},
		{"abort records the oldest other open transaction", []step{
			{dataOp(2, 0, 0, 1, true), nil, 0},
			{dataOp(1, 0, 0, 2, true), nil, 0},
			{markerOp(1, 0, 0, false), nil, 0},
			{markerOp(2, 0, 0, true), nil, 5},
		}, []AbortedTxn{{1, 1, 3, 0}}},
		{"interleaved producers: the oldest bounds the LSO", []step{
			{dataOp(1, 0, 0, 1, true), nil, 0},
			{dataOp(2, 0, 0, 1, true), nil, 0},
			{markerOp(1, 0, 0, true), nil, 1},
			{dataOp(1, 0, 1, 1, true), nil, 1},
			{markerOp(2, 0, 0, false), nil, 3},
			{markerOp(1, 0, 0, true), nil, 6},
		}, []AbortedTxn{{2, 1, 4, 3}}},
		{"stale coordinator epoch is fenced", []step{
			{dataOp(1, 0, 0, 1, true), nil, 0},
			{markerOp(1, 0, 5, true), nil, 2},
			{dataOp(1, 0, 1, 1, true), nil, 2},
			{markerOp(1, 0, 4, false), ErrTransactionCoordinatorFenced, 2},
			{markerOp(1, 0, 5, false), nil, 4},
		}, []AbortedTxn{{1, 2, 3, 4}}},
		{"older producer epoch on a marker is invalid", []step{
			{dataOp(1, 3, 0, 1, true), nil, 0},
			{markerOp(1, 2, 0, false), ErrInvalidProducerEpoch, 0},
			{markerOp(1, 3, 0, false), nil, 2},
		}, []AbortedTxn{{1, 0, 1, 2}}},
		{"coordinator-bumped epoch fences the old producer epoch", []step{
			{dataOp(1, 0, 0, 1, true), nil, 0},
			{markerOp(1, 1, 0, false), nil, 2},
			{dataOp(1, 0, 1, 1, true), ErrInvalidProducerEpoch, 2},
			{dataOp(1, 1, 0, 1, true), nil, 2},
		}, []AbortedTxn{{1, 0, 1, 2}}},
		{"non-transactional batch inside a transaction", []step{
			{dataOp(1, 0, 0, 1, true), nil, 0},
			{dataOp(1, 0, 1, 1, false), ErrInvalidTxnState, 0},
			{markerOp(1, 0, 0, true), nil, 2},
			{dataOp(1, 0, 1, 1, false), nil, 3},
		}, nil},
		{"marker without an open transaction is written, closes nothing", []step{
			{markerOp(9, 0, 0, false), nil, 1},
			{dataOp(9, 0, 0, 1, true), nil, 1},
			{markerOp(9, 0, 0, false), nil, 3},
		}, []AbortedTxn{{9, 1, 2, 3}}},
		{"TV2: a marker must be above the transaction's epoch", []step{
			{dataOp(1, 0, 0, 1, true), nil, 0},
			{markerV2Op(1, 0, true), ErrInvalidProducerEpoch, 0},
			{markerV2Op(1, 1, true), nil, 2},
		}, nil},
		{"TV2: a retried marker of an ended transaction is written", []step{
			{dataOp(1, 0, 0, 1, true), nil, 0},
			{markerV2Op(1, 1, false), nil, 2},
			{markerV2Op(1, 1, false), nil, 3},
		}, []AbortedTxn{{1, 0, 1, 2}}},
		{"TV2: a late marker does not end the next transaction", []step{
			{dataOp(1, 0, 0, 1, true), nil, 0},
			{markerV2Op(1, 1, true), nil, 2},
			{dataOp(1, 1, 0, 1, true), nil, 2},
			{markerV2Op(1, 1, false), ErrInvalidProducerEpoch, 2},
			{markerV2Op(1, 2, true), nil, 4},
		}, nil},
		{"sequence continues across a marker of the same epoch", []step{
			{dataOp(1, 0, 0, 2, true), nil, 0},
			{markerOp(1, 0, 0, true), nil, 3},
			{dataOp(1, 0, 5, 1, true), ErrOutOfOrderSequence, 3},
			{dataOp(1, 0, 2, 1, true), nil, 3},
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), DefaultConfig(), newManualClock(), Options{})
			defer l.Close()
			for i, st := range tc.steps {
				leo := l.LogEndOffset()
				_, err := st.op.apply(l)
				if !errors.Is(err, st.wantErr) || (st.wantErr == nil && err != nil) {
					t.Fatalf("step %d: err %v, want %v", i, err, st.wantErr)
				}
				if err != nil && l.LogEndOffset() != leo {
					t.Fatalf("step %d: rejected op appended", i)
				}
				l.SetHighWatermark(l.LogEndOffset())
				if got := l.LastStableOffset(); got != st.wantLSO {
					t.Fatalf("step %d: LSO %d, want %d", i, got, st.wantLSO)
				}
			}
			if got := l.AbortedTransactions(0, l.LogEndOffset()); !slices.Equal(got, tc.aborted) {
				t.Fatalf("aborted %+v, want %+v", got, tc.aborted)
			}
		})
	}
}

// TestTxnLSOWaitsForMarkerReplication: a decided transaction stays
// unstable until the high watermark passes its marker, as Kafka's
// unreplicated transactions do, since a new leader could lack the marker.
func TestTxnLSOWaitsForMarkerReplication(t *testing.T) {
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), DefaultConfig(), newManualClock(), Options{})
	defer l.Close()
	mustOp(t, l, dataOp(1, 0, 0, 3, true))
	mustOp(t, l, markerOp(1, 0, 0, true))
	for hw, want := range []int64{0, 0, 0, 0, 4} {
		l.SetHighWatermark(int64(hw))
		if got := l.LastStableOffset(); got != want {
			t.Fatalf("HW %d: LSO %d, want %d", hw, got, want)
		}
	}
}

func mustOp(t testing.TB, l *Log, op txnOp) AppendInfo {
	t.Helper()
	info, err := op.apply(l)
	if err != nil {
		t.Fatalf("%+v: %v", op, err)
	}
	return info
}

// TestTxnIndexRemovedWithSegment: retention deletes a segment's
// .txnindex with it, and its entries stop being returned.
func TestTxnIndexRemovedWithSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := smallConfig()
	l := openTestLog(t, dir, cfg, newManualClock(), Options{})
	defer l.Close()
	mustOp(t, l, dataOp(1, 0, 0, 1, true))
	mustOp(t, l, markerOp(1, 0, 0, false))
	name := offsetFileName(dir, 0, txnIndexSuffix)
	if _, err := os.Stat(name); err != nil {
		t.Fatalf("txnindex after abort: %v", err)
	}
	for seq := int32(0); l.NumSegments() < 3; seq += 50 {
		mustOp(t, l, dataOp(2, 0, seq, 50, false))
	}
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.DeleteRecordsBefore(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if err := l.deleteExpiredSegments(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Fatalf("txnindex of deleted segment: %v", err)
	}
	if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 0 {
		t.Fatalf("aborted after deletion: %+v", got)
	}
}

// TestTxnLSONotBelowLogStart: DeleteRecords past an open transaction's
// first offset moves the last stable offset up to the log start offset,
// as Kafka clamps the first unstable offset; the transaction still holds
// it there until its marker.
func TestTxnLSONotBelowLogStart(t *testing.T) {
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), DefaultConfig(), newManualClock(), Options{})
	defer l.Close()
	mustOp(t, l, dataOp(1, 0, 0, 2, true))
	mustOp(t, l, dataOp(-1, -1, -1, 3, false))
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	if got := l.LastStableOffset(); got != 3 {
		t.Fatalf("LSO %d, want the log start offset 3", got)
	}
	mustOp(t, l, dataOp(-1, -1, -1, 1, false))
	l.SetHighWatermark(l.LogEndOffset())
	if got := l.LastStableOffset(); got != 3 {
		t.Fatalf("LSO %d with the transaction open, want 3", got)
	}
	mustOp(t, l, markerOp(1, 0, 0, true))
	l.SetHighWatermark(l.LogEndOffset())
	if got := l.LastStableOffset(); got != 7 {
		t.Fatalf("LSO %d after the commit, want 7", got)
	}
}

// TestTxnOpenProducerDoesNotExpire: producer.id.expiration.ms does not
// forget a producer whose transaction is open (Kafka's isProducerExpired),
// else its transaction could never be matched to its marker.
func TestTxnOpenProducerDoesNotExpire(t *testing.T) {
	clock := newManualClock()
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), DefaultConfig(), clock, Options{})
	defer l.Close()
	mustOp(t, l, dataOp(1, 0, 0, 1, true))
	mustOp(t, l, dataOp(2, 0, 0, 1, false))
	clock.Advance(time.Hour)
	if n := l.RemoveExpiredProducers(1000); n != 1 {
		t.Fatalf("expired %d producers, want only the idle idempotent one", n)
	}
	mustOp(t, l, markerOp(1, 0, 0, false))
	if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 1 || got[0].FirstOffset != 0 {
		t.Fatalf("aborted %+v", got)
	}
}

// TestTxnMarkerLogAppendTime: on a LogAppendTime topic a marker carries
// the broker's time, as every leader append there.
func TestTxnMarkerLogAppendTime(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LogAppendTime = true
	clock := newManualClock()
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{})
	defer l.Close()
	mustOp(t, l, dataOp(1, 0, 0, 1, true))
	clock.Advance(time.Second)
	info := mustOp(t, l, markerOp(1, 0, 0, true))
	s, err := l.Read(info.FirstOffset, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	b := readAllSlice(t, s)
	h, err := batch.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if !h.LogAppendTime() || h.MaxTimestamp != clock.Now().UnixMilli() || info.LogAppendTime != h.MaxTimestamp {
		t.Fatalf("marker timestamp %d (log append time %v), append info %d, want %d", h.MaxTimestamp, h.LogAppendTime(), info.LogAppendTime, clock.Now().UnixMilli())
	}
	if err := batch.CheckCRC(b, &h); err != nil {
		t.Fatal(err)
	}
}

// TestTxnIndexAfterInterruptedSwap: a cleaner swap interrupted after its
// commit (Kafka's or Brook's: <base>.log.swap and <base>.txnindex.swap on
// disk) replaces the old segment's .txnindex too. Here the cleaned segment
// kept only the ABORT marker of a transaction whose records it dropped; the
// old .txnindex entry must not survive next to it (a read_committed
// consumer told of an aborted transaction skips the producer's batches up
// to a marker), and the index is rebuilt from the swapped segment, as
// Kafka's LogLoader deletes the swap's index files and recovers the
// segment.
func TestTxnIndexAfterInterruptedSwap(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := smallConfig()
	l := openTestLog(t, dir, cfg, newManualClock(), Options{})
	mustOp(t, l, dataOp(1, 0, 0, 2, true))
	mustOp(t, l, markerOp(1, 0, 0, false))
	for seq := int32(0); l.NumSegments() < 2; seq += 50 {
		mustOp(t, l, dataOp(2, 0, seq, 50, false))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg, err := os.ReadFile(offsetFileName(dir, 0, logSuffix))
	if err != nil {
		t.Fatal(err)
	}
	var cleaned []byte
	if _, _, err := batch.EachBatch(seg, func(h *batch.Header, b []byte) error {
		if h.Control() || h.ProducerID == 2 {
			cleaned = append(cleaned, b...)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(offsetFileName(dir, 0, logSuffix+swapSuffix), cleaned, 0o644); err != nil {
		t.Fatal(err)
	}
	idx, err := os.ReadFile(offsetFileName(dir, 0, txnIndexSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(offsetFileName(dir, 0, txnIndexSuffix+swapSuffix), idx, 0o644); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, cfg, newManualClock(), Options{CleanShutdown: true, RecoveryPoint: math.MaxInt64})
	defer l.Close()
	l.SetHighWatermark(l.LogEndOffset())
	if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 0 {
		t.Fatalf("aborted transactions after the swap: %+v, want none (no record of producer 1 is left)", got)
	}
	for _, suf := range []string{logSuffix + swapSuffix, txnIndexSuffix + swapSuffix} {
		if _, err := os.Stat(offsetFileName(dir, 0, suf)); !os.IsNotExist(err) {
			t.Fatalf("%s left: %v", suf, err)
		}
	}
}
