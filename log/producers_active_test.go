package log

import (
	"path/filepath"
	"testing"
)

// TestActiveProducers checks what DescribeProducers reports: the open
// transaction's first offset until a marker ends it, the last sequence,
// and the marker's coordinator epoch.
func TestActiveProducers(t *testing.T) {
	clock := newManualClock()
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), DefaultConfig(), clock, Options{})
	defer l.Close()
	ts := clock.Now().UnixMilli()
	ops := []txnOp{
		dataOp(-1, -1, -1, 2, false), // offsets 0-1, no producer
		dataOp(7, 3, 0, 2, true),     // 2-3: producer 7 opens a transaction
		dataOp(5, 0, 0, 3, false),    // 4-6: idempotent producer 5
		dataOp(7, 3, 2, 1, true),     // 7
		dataOp(9, 1, 0, 1, true),     // 8: producer 9's transaction
		markerOp(9, 1, 4, false),     // 9: aborted by coordinator epoch 4
	}
	for i, op := range ops {
		if _, err := op.apply(l); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	got := l.ActiveProducers()
	want := []ActiveProducer{
		{ProducerID: 5, ProducerEpoch: 0, LastSequence: 2, LastTimestamp: ts + 2, // max timestamp: a record per ms
			CoordinatorEpoch: -1, CurrentTxnStartOffset: -1},
		{ProducerID: 7, ProducerEpoch: 3, LastSequence: 2, LastTimestamp: ts, CoordinatorEpoch: -1, CurrentTxnStartOffset: 2},
		{ProducerID: 9, ProducerEpoch: 1, LastSequence: 0, LastTimestamp: ts, CoordinatorEpoch: 4, CurrentTxnStartOffset: -1},
	}
	if len(got) != len(want) {
		t.Fatalf("ActiveProducers = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("producer %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
