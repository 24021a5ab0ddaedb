package replica

import (
	"errors"
	"testing"

	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
)

// TestLastStableOffsetFollowsTransactions: a leader's last stable offset
// stops at an open transaction, and after its marker waits until the ISR
// has replicated the marker (the HW passed it); markers need leadership
// and a large enough ISR, as acks=all.
func TestLastStableOffsetFollowsTransactions(t *testing.T) {
	f := newFixture(t, leaderState())
	plain := f.produce(2)
	f.fetch(2, plain)
	f.fetch(3, plain)
	txn, err := batch.Build(batch.BuildOptions{BaseTimestamp: 1, Transactional: true, Producer: &batch.Producer{ID: 5, Epoch: 0, BaseSequence: 0}},
		[]batch.Record{{Value: []byte("a")}, {OffsetDelta: 1, Value: []byte("b")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, _, err := f.p.AppendAsLeaderInTerm(txn, -1, 1)
	if err != nil {
		t.Fatal(err)
	}
	first := info.FirstOffset
	f.fetch(2, info.LastOffset+1)
	f.fetch(3, info.LastOffset+1)
	if hw, lso := f.p.HighWatermark(), f.p.LastStableOffset(); hw != info.LastOffset+1 || lso != first {
		t.Fatalf("open transaction: HW %d, LSO %d, want %d, %d", hw, lso, info.LastOffset+1, first)
	}
	marker := log.TxnMarker{ProducerID: 5, ProducerEpoch: 0, CoordinatorEpoch: 1, Commit: true}
	if _, _, err := f.p.AppendTxnMarkerAsLeader(marker, 4); !errors.Is(err, ErrNotEnoughReplicas) {
		t.Fatalf("marker with ISR below min: %v", err)
	}
	minfo, term, err := f.p.AppendTxnMarkerAsLeader(marker, 2)
	if err != nil {
		t.Fatal(err)
	}
	if term < 0 || minfo.FirstOffset != info.LastOffset+1 {
		t.Fatalf("marker at %+v term %d", minfo, term)
	}
	f.fetch(2, minfo.LastOffset+1)
	if lso := f.p.LastStableOffset(); lso != first {
		t.Fatalf("marker not yet replicated by 3: LSO %d, want %d", lso, first)
	}
	f.fetch(3, minfo.LastOffset+1)
	if hw, lso := f.p.HighWatermark(), f.p.LastStableOffset(); lso != hw || hw != minfo.LastOffset+1 {
		t.Fatalf("marker replicated: HW %d, LSO %d", hw, lso)
	}
	f.leaderAndISR(State{Leader: 2, LeaderEpoch: 7, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, ZKVersion: 9})
	if _, _, err := f.p.AppendTxnMarkerAsLeader(marker, 1); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("marker as follower: %v", err)
	}
}
