package group

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

func (h *harness) txnCommit(a txnCommitArgs) []int16 {
	var codes []int16
	h.run(func(eff *effects) { codes = h.s.txnCommit(a, h.now, eff, nil) })
	return codes
}

func txnArgs(pid int64, member string, gen int32, offset int64) txnCommitArgs {
	return txnCommitArgs{groupID: "g", producerID: pid, producerEpoch: 2, memberID: member, generation: gen,
		partitions: []commitPartition{{tp: tp0, entry: entry(offset, "")}}}
}

func TestTxnCommitPendingUntilMarker(t *testing.T) {
	for _, commit := range []bool{true, false} {
		h := newHarness(t, testLimits())
		if codes := h.txnCommit(txnArgs(7, "", -1, 42)); codes[0] != 0 {
			t.Fatalf("txn commit: %v", codes)
		}
		if len(h.writes) != 1 || h.writes[0].producer == nil || h.writes[0].producer.ID != 7 || h.writes[0].producer.Epoch != 2 {
			t.Fatalf("write %+v is not the producer's transactional batch", h.writes)
		}
		h.completeWrites(nil)
		if f := h.s.fetchOffsets("g", []topicPartition{tp0}, false); f[0].offset != -1 {
			t.Fatalf("pending offset visible: %+v", f)
		}
		if f := h.s.fetchOffsets("g", []topicPartition{tp0}, true); f[0].err != kerr.UnstableOffsetCommit.Code {
			t.Fatalf("require_stable fetch: %+v", f)
		}
		h.s.completeTxnOffsets(8, true) // another producer's marker
		if f := h.s.fetchOffsets("g", []topicPartition{tp0}, false); f[0].offset != -1 {
			t.Fatalf("another producer's marker committed it: %+v", f)
		}
		h.s.completeTxnOffsets(7, commit)
		want := int64(-1)
		if commit {
			want = 42
		}
		if f := h.s.fetchOffsets("g", []topicPartition{tp0}, true); f[0].offset != want || f[0].err != 0 {
			t.Fatalf("after marker (commit %v): %+v", commit, f)
		}
	}
}

func TestTxnCommitValidation(t *testing.T) {
	h := newHarness(t, testLimits())
	j := h.join(withInstance("i1"))
	h.completeWrites(nil)
	r := <-j
	h.sync(r.memberID, r.generation, map[string][]byte{r.memberID: nil})
	h.completeWrites(nil)
	cases := []struct {
		name string
		a    txnCommitArgs
		want int16
	}{
		{"no member (v0-2)", txnArgs(7, "", -1, 1), 0},
		{"member of the generation", txnArgs(7, r.memberID, r.generation, 1), 0},
		{"unknown member", txnArgs(7, "nobody", r.generation, 1), kerr.UnknownMemberID.Code},
		{"old generation", txnArgs(7, r.memberID, r.generation-1, 1), kerr.IllegalGeneration.Code},
		{"fenced static member", func() txnCommitArgs {
			a := txnArgs(7, "other", r.generation, 1)
			a.instanceID = "i1"
			return a
		}(), kerr.FencedInstanceID.Code},
		{"metadata too large", func() txnCommitArgs {
			a := txnArgs(7, "", -1, 1)
			a.partitions[0].entry.metadata = "0123456789abcdefX"
			return a
		}(), kerr.OffsetMetadataTooLarge.Code},
	}
	for _, tc := range cases {
		codes := h.txnCommit(tc.a)
		h.completeWrites(nil)
		if codes[0] != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(codes[0]), kerr.ErrorForCode(tc.want))
		}
	}
	h.group().state = StateDead
	if codes := h.txnCommit(txnArgs(7, "", -1, 1)); codes[0] != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("dead group: %v", codes)
	}
}

// controlBatch is the COMMIT or ABORT marker the log side writes.
func controlBatch(t *testing.T, pid int64, epoch int16, commit bool) []byte {
	t.Helper()
	key := make([]byte, 4)
	if commit {
		binary.BigEndian.PutUint16(key[2:], 1)
	}
	b, err := batch.Build(batch.BuildOptions{
		PartitionLeaderEpoch: batch.NoPartitionLeader, Control: true, Transactional: true,
		Producer: &batch.Producer{ID: pid, Epoch: epoch, BaseSequence: -1},
	}, []batch.Record{{Key: key, Value: []byte{0, 0, 0, 0, 0, 5}}}, batch.MustCodecs())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) txnCommit(pid int64, offset int64) int16 {
	e.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", "g", pid, 0
	req.Generation = -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return e.c.TxnOffsetCommit(e.ctx, req).Topics[0].Partitions[0].ErrorCode
}

func (e *env) stableOffset() (int64, int16) {
	e.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = "g"
	req.RequireStable = true
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0}
	req.Topics = append(req.Topics, rt)
	p := e.c.OffsetFetch(e.ctx, req).Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode
}

// TestTxnOffsetCommitThroughCoordinator writes transactional batches,
// completes them through OnTxnMarker and reloads the log, where the
// loader must honour the markers.
func TestTxnOffsetCommitThroughCoordinator(t *testing.T) {
	e := newEnv(t)
	if code := e.txnCommit(7, 10); code != 0 {
		t.Fatalf("txn commit: %v", kerr.ErrorForCode(code))
	}
	e.p.mu.Lock()
	last := e.p.batches[len(e.p.batches)-1]
	e.p.mu.Unlock()
	h, err := batch.ParseHeader(last)
	if err != nil || !h.Transactional() || h.ProducerID != 7 || h.ProducerEpoch != 0 || h.BaseSequence != 0 {
		t.Fatalf("txn offset batch header %+v: %v", h, err)
	}
	if o, code := e.stableOffset(); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("stable fetch while pending: %d %v", o, kerr.ErrorForCode(code))
	}
	// The log side appends the marker, then tells the coordinator.
	if _, err := e.p.Append(e.ctx, controlBatch(t, 7, 0, true)); err != nil {
		t.Fatal(err)
	}
	e.c.OnTxnMarker(0, 7, true)
	if o, code := e.stableOffset(); code != 0 || o != 10 {
		t.Fatalf("after commit marker: %d %v", o, kerr.ErrorForCode(code))
	}
	// Producer 8 commits 20 and aborts; producer 9 leaves 30 open.
	e.txnCommit(8, 20)
	if _, err := e.p.Append(e.ctx, controlBatch(t, 8, 0, false)); err != nil {
		t.Fatal(err)
	}
	e.c.OnTxnMarker(0, 8, false)
	e.txnCommit(9, 30)
	if o, code := e.stableOffset(); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("open transaction: %d %v", o, kerr.ErrorForCode(code))
	}

	e.restart()
	if o, code := e.stableOffset(); code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("open transaction after reload: %d %v", o, kerr.ErrorForCode(code))
	}
	if _, err := e.p.Append(e.ctx, controlBatch(t, 9, 0, false)); err != nil {
		t.Fatal(err)
	}
	e.c.OnTxnMarker(0, 9, false)
	if o, code := e.stableOffset(); code != 0 || o != 10 {
		t.Fatalf("after reload: offset %d %v, want the committed 10", o, kerr.ErrorForCode(code))
	}
	e.restart()
	if o, code := e.stableOffset(); code != 0 || o != 10 {
		t.Fatalf("after second reload: offset %d %v, want 10", o, kerr.ErrorForCode(code))
	}
}

// TestTxnMarkerDuringLoadIsKept: a marker reported while the partition
// loads, and not in what the loader read, still ends the producer's
// pending offsets once the load is done.
func TestTxnMarkerDuringLoadIsKept(t *testing.T) {
	e := newEnv(t)
	if code := e.txnCommit(7, 10); code != 0 {
		t.Fatalf("txn commit: %v", kerr.ErrorForCode(code))
	}
	e.c.Close()
	gate := make(chan struct{})
	e.p.readGate = gate
	e.c = New(Config{NumPartitions: 1, Now: e.clock.Now})
	t.Cleanup(e.c.Close)
	e.c.OnElected(0, 2, e.p)
	e.c.OnTxnMarker(0, 7, true)
	close(gate)
	e.waitLoaded()
	if o, code := e.stableOffset(); code != 0 || o != 10 {
		t.Fatalf("after load: offset %d %v, want the committed 10", o, kerr.ErrorForCode(code))
	}
}
