package txn

import (
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The tests below cover transaction version 2 (KIP-890 part 2): the
// request versions that carry it (AddPartitionsToTxn v4+, EndTxn v5+)
// bump the epoch at every EndTxn, and the markers carry the bumped epoch.

// endV2Pending sends an EndTxn v5, allocating a producer id when the step
// asks for one.
func (h *harness) endV2Pending(id string, pid int64, epoch int16, commit bool) chan EndResult {
	h.t.Helper()
	ch := make(chan EndResult, 1)
	a := endArgs{txnID: id, producerID: pid, epoch: epoch, commit: commit, tv: TV2, reply: func(r EndResult) { ch <- r }}
	h.withProducerID(func(newID int64, eff *effects) bool {
		a.newProducerID = newID
		return h.s.endTxnV2(a, h.now, eff)
	})
	return ch
}

func (h *harness) endV2(id string, pid int64, epoch int16, commit bool) EndResult {
	h.t.Helper()
	ch := h.endV2Pending(id, pid, epoch, commit)
	h.complete(nil)
	select {
	case r := <-ch:
		return r
	default:
		h.t.Fatal("no EndTxn answer")
		return EndResult{}
	}
}

func (h *harness) addV2(id string, pid int64, epoch int16, tps ...TopicPartition) int16 {
	h.t.Helper()
	ch := make(chan int16, 1)
	h.run(func(eff *effects) {
		h.s.addPartitions(id, pid, epoch, tps, TV2, h.now, eff, func(c int16) { ch <- c })
	})
	h.complete(nil)
	return codeAnswer(h.t, ch)
}

func wantEnd(t *testing.T, what string, got EndResult, code int16, pid int64, epoch int16) {
	t.Helper()
	if got.Err != code || (code == 0 && (got.ProducerID != pid || got.ProducerEpoch != epoch)) {
		t.Fatalf("%s: %+v, want code %d (%v) producer %d epoch %d", what, got, code, kerr.ErrorForCode(code), pid, epoch)
	}
}

// TestTV2EpochBumpsPerTransaction: each EndTxn v5 bumps the epoch, the
// markers carry the bumped epoch and version 2, and the answer hands the
// producer its new epoch for the next transaction.
func TestTV2EpochBumpsPerTransaction(t *testing.T) {
	h := reach(t, StateEmpty)
	epoch := int16(0)
	for i, commit := range []bool{true, false, true} {
		wantCode(t, "add", h.addV2(id, pid, epoch, foo0), 0)
		if m := h.meta(id); m.clientTV != TV2 {
			t.Fatalf("transaction %d: client transaction version %d after a v4+ add", i, m.clientTV)
		}
		r := h.endV2(id, pid, epoch, commit)
		wantEnd(t, "end", r, 0, pid, epoch+1)
		if len(h.markers) != 1 || h.markers[0].ProducerEpoch != epoch+1 || h.markers[0].Commit != commit || h.markers[0].TransactionVersion != 2 {
			t.Fatalf("transaction %d: markers %+v", i, h.markers)
		}
		if m := h.meta(id); m.epoch != epoch+1 || m.lastEpoch != epoch {
			t.Fatalf("transaction %d: prepared at epoch %d last %d", i, m.epoch, m.lastEpoch)
		}
		h.finishMarkers()
		epoch++
	}
	// The old epoch is fenced once the bump is committed.
	wantCode(t, "add at the old epoch", h.addV2(id, pid, epoch-1, foo1), kerr.ProducerFenced.Code)
	wantEnd(t, "abort at an older epoch", h.endV2(id, pid, epoch-2, false), kerr.ProducerFenced.Code, 0, 0)
	// A retry of the last EndTxn (the producer still holds epoch-1) is
	// answered as Kafka does: success with the current id and epoch, and
	// nothing written.
	before := len(h.written)
	wantEnd(t, "retried commit", h.endV2(id, pid, epoch-1, true), 0, pid, epoch)
	wantEnd(t, "retried commit as abort", h.endV2(id, pid, epoch-1, false), kerr.InvalidTxnState.Code, 0, 0)
	if len(h.written) != before {
		t.Fatal("a retried EndTxn wrote a record")
	}
}

// TestTV2RetryWhilePrepared: a retried EndTxn while the markers are still
// being written waits (CONCURRENT_TRANSACTIONS); the same epoch again is a
// new EndTxn, which is fenced while prepared.
func TestTV2RetryWhilePrepared(t *testing.T) {
	h := reach(t, StateEmpty)
	wantCode(t, "add", h.addV2(id, pid, 0, foo0), 0)
	wantEnd(t, "commit", h.endV2(id, pid, 0, true), 0, pid, 1)
	wantEnd(t, "retried commit", h.endV2(id, pid, 0, true), kerr.ConcurrentTransactions.Code, 0, 0)
	wantEnd(t, "retried as abort", h.endV2(id, pid, 0, false), kerr.InvalidTxnState.Code, 0, 0)
	wantEnd(t, "next epoch while prepared", h.endV2(id, pid, 1, true), kerr.ProducerFenced.Code, 0, 0)
	wantCode(t, "next transaction while prepared", h.addV2(id, pid, 1, foo0), kerr.ConcurrentTransactions.Code)
	h.finishMarkers()
	wantCode(t, "next transaction", h.addV2(id, pid, 1, foo0), 0)
	h.wantState(id, StateOngoing)
}

// TestTV2AbortWithoutPartitions: a TV2 producer may abort a transaction
// it never added a partition to (it cannot know whether a leader added
// one); the epoch is bumped all the same. A commit of nothing is
// INVALID_TXN_STATE, as in Kafka.
func TestTV2AbortWithoutPartitions(t *testing.T) {
	for _, from := range []State{StateEmpty, StateCompleteCommit, StateCompleteAbort} {
		t.Run(from.String(), func(t *testing.T) {
			h := reach(t, from)
			h.markers = nil
			wantEnd(t, "commit of nothing", h.endV2(id, pid, 0, true), kerr.InvalidTxnState.Code, 0, 0)
			wantEnd(t, "abort", h.endV2(id, pid, 0, false), 0, pid, 1)
			h.wantState(id, StatePrepareAbort)
			if len(h.markers) != 1 || len(h.markers[0].Partitions) != 0 {
				t.Fatalf("markers %+v", h.markers)
			}
			if m := h.meta(id); m.startMs != h.now.UnixMilli() {
				t.Fatalf("start %d, want the abort's time", m.startMs)
			}
			h.finishMarkers()
			h.wantState(id, StateCompleteAbort)
		})
	}
}

// TestTV2EpochOverflowRotatesProducerID: the EndTxn that bumps to the last
// epoch allocates the next producer id; the markers carry the old id at
// MaxInt16, the answer the new id at epoch 0, and a retry with the old id
// is recognised.
func TestTV2EpochOverflowRotatesProducerID(t *testing.T) {
	h := reach(t, StateEmpty)
	last := int16(math.MaxInt16 - 1)
	h.meta(id).epoch = last
	wantCode(t, "add", h.addV2(id, pid, last, foo0), 0)
	r := h.endV2(id, pid, last, true)
	wantEnd(t, "commit at the last epoch", r, 0, pid+1, 0)
	if len(h.markers) != 1 || h.markers[0].ProducerID != pid || h.markers[0].ProducerEpoch != math.MaxInt16 {
		t.Fatalf("markers %+v", h.markers)
	}
	if m := h.meta(id); m.producerID != pid || m.nextProducerID != pid+1 || m.epoch != math.MaxInt16 {
		t.Fatalf("prepared: %+v", m.snapshot)
	}
	wantEnd(t, "retry while prepared", h.endV2(id, pid, last, true), kerr.ConcurrentTransactions.Code, 0, 0)
	h.finishMarkers()
	m := h.meta(id)
	if m.producerID != pid+1 || m.epoch != 0 || m.lastProducerID != pid || m.nextProducerID != -1 {
		t.Fatalf("completed: %+v", m.snapshot)
	}
	wantEnd(t, "retry after the rotation", h.endV2(id, pid, last, true), 0, pid+1, 0)
	wantCode(t, "old producer id", h.addV2(id, pid, last, foo0), kerr.InvalidProducerIDMapping.Code)
	wantCode(t, "new producer id", h.addV2(id, pid+1, 0, foo0), 0)
}

// TestTV2FenceOfOngoingTransaction: an InitProducerId fencing a TV2
// transaction bumps the epoch once to fence and once more for the abort's
// markers, as Kafka's prepareFenceProducerEpoch followed by a TV2
// prepareAbortOrCommit does; the old producer's EndTxn is fenced.
func TestTV2FenceOfOngoingTransaction(t *testing.T) {
	h := reach(t, StateEmpty)
	wantCode(t, "add", h.addV2(id, pid, 0, foo0), 0)
	wantCode(t, "fencing init", h.init(id, 10_000, -1, -1).Err, kerr.ConcurrentTransactions.Code)
	if len(h.markers) != 1 || h.markers[0].ProducerEpoch != 2 || h.markers[0].Commit {
		t.Fatalf("abort markers %+v", h.markers)
	}
	wantEnd(t, "old producer commits", h.endV2(id, pid, 0, true), kerr.ProducerFenced.Code, 0, 0)
	h.finishMarkers()
	if r := h.init(id, 10_000, -1, -1); r.Err != 0 || r.ProducerEpoch != 3 {
		t.Fatalf("init after the abort: %+v", r)
	}
}

// TestTV1ClientsKeepTheirEpoch: a transaction of AddPartitionsToTxn v3 and
// EndTxn v3 keeps Kafka 3.9's rules: no bump, markers at the producer's
// epoch with version 0.
func TestTV1ClientsKeepTheirEpoch(t *testing.T) {
	h := reach(t, StatePrepareCommit)
	if len(h.markers) != 1 || h.markers[0].ProducerEpoch != 0 || h.markers[0].TransactionVersion != 0 {
		t.Fatalf("markers %+v", h.markers)
	}
	if m := h.meta(id); m.epoch != 0 || m.clientTV != 0 {
		t.Fatalf("prepared: %+v", m.snapshot)
	}
}

// TestRecordKeepsTV2Fields: the record of a transition carries the
// previous and next producer ids and the client's transaction version
// (TxnMetadataValue v1), so that a reloaded coordinator still recognises
// a retry across a rotation.
func TestRecordKeepsTV2Fields(t *testing.T) {
	s := snapshot{
		producerID: 77, lastProducerID: 55, nextProducerID: 78, epoch: 3, lastEpoch: 2, timeoutMs: 6000,
		state: StatePrepareCommit, partitions: []TopicPartition{tp("a", 1)}, startMs: 1, lastUpdateMs: 2, clientTV: TV2,
	}
	r := metadataRecord("tx", s)
	_, got, _, err := decodeRecord(r.key, r.value)
	if err != nil || got == nil {
		t.Fatalf("decode: %+v %v", got, err)
	}
	if got.lastProducerID != 55 || got.nextProducerID != 78 || got.clientTV != TV2 || !slices.Equal(got.partitions, s.partitions) {
		t.Fatalf("decoded %+v, want %+v", *got, s)
	}
	// Kafka does not persist the last epoch either: it loads as none.
	if got.lastEpoch != noProducerEpoch {
		t.Fatalf("last epoch %d", got.lastEpoch)
	}
}
