package txn

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

const (
	id  = "t"
	pid = int64(1000) // the first id the harness hands out
)

var foo0, foo1 = tp("foo", 0), tp("foo", 1)

// reach brings id "t" (producer 1000, epoch 0) to st through client
// requests, every record committed.
func reach(t *testing.T, st State) *harness {
	t.Helper()
	h := newHarness(t)
	if r := h.init(id, 10_000, -1, -1); r.Err != 0 || r.ProducerID != pid || r.ProducerEpoch != 0 {
		t.Fatalf("init: %+v", r)
	}
	switch st {
	case StateEmpty:
		return h
	}
	wantCode(t, "add", h.add(id, pid, 0, foo0), 0)
	switch st {
	case StateOngoing:
	case StatePrepareCommit, StateCompleteCommit:
		wantCode(t, "commit", h.end(id, pid, 0, true), 0)
	case StatePrepareAbort, StateCompleteAbort:
		wantCode(t, "abort", h.end(id, pid, 0, false), 0)
	}
	if st == StateCompleteCommit || st == StateCompleteAbort {
		h.finishMarkers()
	}
	h.wantState(id, st)
	return h
}

var allStates = []State{StateEmpty, StateOngoing, StatePrepareCommit, StatePrepareAbort, StateCompleteCommit, StateCompleteAbort}

func TestInitProducerIDArguments(t *testing.T) {
	cases := []struct {
		name      string
		txnID     string
		timeoutMs int32
		pid       int64
		epoch     int16
		want      int16
	}{
		{"empty id", "", 1000, -1, -1, kerr.InvalidRequest.Code},
		{"zero timeout", id, 0, -1, -1, kerr.InvalidTransactionTimeout.Code},
		{"negative timeout", id, -5, -1, -1, kerr.InvalidTransactionTimeout.Code},
		{"above transaction.max.timeout.ms", id, testMaxTimeoutMs + 1, -1, -1, kerr.InvalidTransactionTimeout.Code},
		{"at transaction.max.timeout.ms", id, testMaxTimeoutMs, -1, -1, 0},
		{"producer id without epoch", id, 1000, 5, -1, kerr.InvalidRequest.Code},
		{"epoch without producer id", id, 1000, -1, 3, kerr.InvalidRequest.Code},
		{"KIP-360 fields for a new id", id, 1000, 77, 3, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			r := h.init(tc.txnID, tc.timeoutMs, tc.pid, tc.epoch)
			wantCode(t, "init", r.Err, tc.want)
			if tc.want != 0 {
				if r.ProducerID != -1 || r.ProducerEpoch != -1 || len(h.written) != 0 {
					t.Fatalf("failed init answered %+v and wrote %d records", r, len(h.written))
				}
				return
			}
			if r.ProducerID != pid || r.ProducerEpoch != 0 {
				t.Fatalf("init: %+v", r)
			}
		})
	}
}

// TestInitProducerIDByState covers InitProducerId from every state.
func TestInitProducerIDByState(t *testing.T) {
	cases := []struct {
		from      State
		want      int16
		wantState State
		wantEpoch int16
	}{
		{StateEmpty, 0, StateEmpty, 1},
		// An ongoing transaction of the old producer is aborted under a
		// bumped epoch; the client retries.
		{StateOngoing, kerr.ConcurrentTransactions.Code, StatePrepareAbort, 1},
		{StatePrepareCommit, kerr.ConcurrentTransactions.Code, StatePrepareCommit, 0},
		{StatePrepareAbort, kerr.ConcurrentTransactions.Code, StatePrepareAbort, 0},
		{StateCompleteCommit, 0, StateEmpty, 1},
		{StateCompleteAbort, 0, StateEmpty, 1},
	}
	for _, tc := range cases {
		t.Run(tc.from.String(), func(t *testing.T) {
			h := reach(t, tc.from)
			h.markers = nil
			r := h.init(id, 20_000, -1, -1)
			wantCode(t, "init", r.Err, tc.want)
			h.wantState(id, tc.wantState)
			m := h.meta(id)
			if m.epoch != tc.wantEpoch || m.producerID != pid {
				t.Fatalf("producer %d epoch %d, want %d epoch %d", m.producerID, m.epoch, pid, tc.wantEpoch)
			}
			if tc.want == 0 {
				if r.ProducerID != pid || r.ProducerEpoch != tc.wantEpoch {
					t.Fatalf("answer %+v", r)
				}
				if m.timeoutMs != 20_000 || len(m.partitions) != 0 || m.startMs != -1 {
					t.Fatalf("after init: %+v", m.snapshot)
				}
			}
		})
	}
}

func TestInitProducerIDFencesOngoingTransaction(t *testing.T) {
	h := reach(t, StateOngoing)
	r := h.init(id, 10_000, -1, -1)
	wantCode(t, "init", r.Err, kerr.ConcurrentTransactions.Code)
	if len(h.markers) != 1 {
		t.Fatalf("marker jobs %+v", h.markers)
	}
	job := h.markers[0]
	if job.Commit || job.ProducerEpoch != 1 || job.CoordinatorEpoch != 5 || !slices.Equal(job.Partitions, []TopicPartition{foo0}) {
		t.Fatalf("abort job %+v", job)
	}
	// The old producer is fenced at once.
	wantCode(t, "old producer's commit", h.end(id, pid, 0, true), kerr.ProducerFenced.Code)
	wantCode(t, "retry while aborting", h.init(id, 10_000, -1, -1).Err, kerr.ConcurrentTransactions.Code)
	h.finishMarkers()
	h.wantState(id, StateCompleteAbort)
	r = h.init(id, 10_000, -1, -1)
	if r.Err != 0 || r.ProducerID != pid || r.ProducerEpoch != 2 {
		t.Fatalf("retry: %+v", r)
	}
}

func TestInitProducerIDPendingWrite(t *testing.T) {
	h := reach(t, StateEmpty)
	ch := h.initPending(id, 10_000, -1, -1)
	wantCode(t, "second init", h.init(id, 10_000, -1, -1).Err, kerr.ConcurrentTransactions.Code)
	if r := h.answer(ch); r.Err != 0 || r.ProducerEpoch != 1 {
		t.Fatalf("first init: %+v", r)
	}
}

func TestInitProducerIDAppendFailure(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int16
	}{
		{ErrNotLeader, kerr.NotCoordinator.Code},
		{kerr.NotEnoughReplicas, kerr.CoordinatorNotAvailable.Code},
		{errAppend, kerr.CoordinatorNotAvailable.Code},
	} {
		h := reach(t, StateEmpty)
		ch := h.initPending(id, 10_000, -1, -1)
		h.complete(tc.err)
		wantCode(t, tc.err.Error(), h.answer(ch).Err, tc.want)
		if m := h.meta(id); m.epoch != 0 || m.pending {
			t.Fatalf("after failed append: epoch %d pending %v", m.epoch, m.pending)
		}
	}
}

func TestInitProducerIDEpochExhaustion(t *testing.T) {
	h := reach(t, StateEmpty)
	h.meta(id).epoch = math.MaxInt16 - 1
	r := h.init(id, 10_000, -1, -1)
	if r.Err != 0 || r.ProducerID != pid+1 || r.ProducerEpoch != 0 {
		t.Fatalf("rotation: %+v", r)
	}
	m := h.meta(id)
	if m.lastProducerID != pid || m.lastEpoch != -1 {
		t.Fatalf("after rotation: %+v", m.snapshot)
	}
	// Below exhaustion the epoch is bumped as usual.
	h.meta(id).epoch = math.MaxInt16 - 2
	if r := h.init(id, 10_000, -1, -1); r.ProducerID != pid+1 || r.ProducerEpoch != math.MaxInt16-1 {
		t.Fatalf("bump to the last epoch: %+v", r)
	}
}

// TestInitProducerIDKIP360 covers recovery with the producer's current id
// and epoch in the request.
func TestInitProducerIDKIP360(t *testing.T) {
	h := reach(t, StateEmpty)
	r := h.init(id, 10_000, pid, 0)
	if r.Err != 0 || r.ProducerEpoch != 1 || h.meta(id).lastEpoch != 0 {
		t.Fatalf("bump: %+v, last epoch %d", r, h.meta(id).lastEpoch)
	}
	// The answer was lost and the producer retries with its old epoch:
	// it gets the same epoch again.
	r = h.init(id, 10_000, pid, 0)
	if r.Err != 0 || r.ProducerEpoch != 1 {
		t.Fatalf("retry: %+v", r)
	}
	wantCode(t, "stale epoch", h.init(id, 10_000, pid, 7).Err, kerr.ProducerFenced.Code)
	wantCode(t, "other producer id", h.init(id, 10_000, pid+50, 1).Err, kerr.ProducerFenced.Code)
	wantCode(t, "unrelated producer id", h.init(id, 10_000, 5, 1).Err, kerr.ProducerFenced.Code)

	// Rotation with KIP-360 fields remembers the exhausted epoch, so that
	// a retry with the old id is answered with the new one.
	h.meta(id).epoch = math.MaxInt16 - 1
	r = h.init(id, 10_000, pid, math.MaxInt16-1)
	if r.Err != 0 || r.ProducerID != pid+1 || r.ProducerEpoch != 0 {
		t.Fatalf("rotation: %+v", r)
	}
	if m := h.meta(id); m.lastProducerID != pid || m.lastEpoch != math.MaxInt16-1 {
		t.Fatalf("after rotation: %+v", m.snapshot)
	}
	r = h.init(id, 10_000, pid, math.MaxInt16-1)
	if r.Err != 0 || r.ProducerID != pid+1 || r.ProducerEpoch != 0 {
		t.Fatalf("retry of rotation: %+v", r)
	}
	wantCode(t, "previous id with a live epoch", h.init(id, 10_000, pid, 3).Err, kerr.ProducerFenced.Code)
}

func TestAddPartitionsErrors(t *testing.T) {
	cases := []struct {
		name  string
		txnID string
		pid   int64
		epoch int16
		want  int16
	}{
		{"empty id", "", pid, 0, kerr.InvalidRequest.Code},
		{"unknown id", "other", pid, 0, kerr.InvalidProducerIDMapping.Code},
		{"other producer id", id, pid + 1, 0, kerr.InvalidProducerIDMapping.Code},
		{"older epoch", id, pid, -1, kerr.ProducerFenced.Code},
		{"newer epoch", id, pid, 1, kerr.ProducerFenced.Code},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := reach(t, StateEmpty)
			wantCode(t, "add", h.add(tc.txnID, tc.pid, tc.epoch, foo0), tc.want)
			h.wantState(id, StateEmpty)
		})
	}
}

// TestAddPartitionsByState covers AddPartitionsToTxn from every state.
func TestAddPartitionsByState(t *testing.T) {
	cases := []struct {
		from State
		want int16
	}{
		{StateEmpty, 0},
		{StateOngoing, 0},
		{StatePrepareCommit, kerr.ConcurrentTransactions.Code},
		{StatePrepareAbort, kerr.ConcurrentTransactions.Code},
		{StateCompleteCommit, 0},
		{StateCompleteAbort, 0},
	}
	for _, tc := range cases {
		t.Run(tc.from.String(), func(t *testing.T) {
			h := reach(t, tc.from)
			before := h.meta(id).snapshot
			h.now = h.now.Add(time.Second)
			wantCode(t, "add", h.add(id, pid, 0, foo1), tc.want)
			m := h.meta(id)
			if tc.want != 0 {
				h.wantState(id, tc.from)
				return
			}
			h.wantState(id, StateOngoing)
			want := []TopicPartition{foo1}
			wantStart := h.now.UnixMilli()
			if tc.from == StateOngoing {
				want = []TopicPartition{foo0, foo1}
				wantStart = before.startMs
			}
			if !slices.Equal(m.partitions, want) || m.startMs != wantStart || m.lastUpdateMs != h.now.UnixMilli() {
				t.Fatalf("after add: %+v", m.snapshot)
			}
		})
	}
}

func TestAddPartitionsAlreadyInTransactionWritesNothing(t *testing.T) {
	h := reach(t, StateOngoing)
	n := len(h.written)
	ch := h.addPending(id, pid, 0, foo0)
	if len(h.writes) != 0 {
		t.Fatal("adding a partition already in the transaction appends")
	}
	wantCode(t, "add", codeAnswer(t, ch), 0)
	if len(h.written) != n {
		t.Fatal("records written")
	}
}

func TestAddPartitionsPendingAndFailure(t *testing.T) {
	h := reach(t, StateEmpty)
	ch := h.addPending(id, pid, 0, foo0)
	wantCode(t, "while pending", codeAnswer(t, h.addPending(id, pid, 0, foo1)), kerr.ConcurrentTransactions.Code)
	h.complete(ErrNotLeader)
	wantCode(t, "failed append", codeAnswer(t, ch), kerr.NotCoordinator.Code)
	h.wantState(id, StateEmpty)
	if len(h.meta(id).partitions) != 0 {
		t.Fatal("partitions kept after a failed append")
	}
}

func TestVerifyPartitions(t *testing.T) {
	h := reach(t, StateOngoing)
	got := h.s.verifyPartitions(id, pid, 0, []TopicPartition{foo0, foo1})
	if got[foo0] != 0 || got[foo1] != kerr.InvalidTxnState.Code {
		t.Fatalf("verify: %v", got)
	}
	if got := h.s.verifyPartitions(id, pid, 1, []TopicPartition{foo0}); got[foo0] != kerr.ProducerFenced.Code {
		t.Fatalf("verify with another epoch: %v", got)
	}
	if got := h.s.verifyPartitions("x", pid, 0, []TopicPartition{foo0}); got[foo0] != kerr.InvalidProducerIDMapping.Code {
		t.Fatalf("verify unknown id: %v", got)
	}
	if len(h.writes) != 0 {
		t.Fatal("verify appends")
	}
}

func TestEndTxnErrors(t *testing.T) {
	cases := []struct {
		name  string
		txnID string
		pid   int64
		epoch int16
		want  int16
	}{
		{"empty id", "", pid, 0, kerr.InvalidRequest.Code},
		{"unknown id", "other", pid, 0, kerr.InvalidProducerIDMapping.Code},
		{"other producer id", id, pid + 1, 0, kerr.InvalidProducerIDMapping.Code},
		{"older epoch", id, pid, -1, kerr.ProducerFenced.Code},
		{"newer epoch", id, pid, 1, kerr.ProducerFenced.Code},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := reach(t, StateOngoing)
			wantCode(t, "end", h.end(tc.txnID, tc.pid, tc.epoch, true), tc.want)
			h.wantState(id, StateOngoing)
		})
	}
}

// TestEndTxnByState covers commit and abort from every state.
func TestEndTxnByState(t *testing.T) {
	type outcome struct {
		code  int16
		state State
	}
	cases := []struct {
		from          State
		commit, abort outcome
	}{
		{StateEmpty, outcome{kerr.InvalidTxnState.Code, StateEmpty}, outcome{kerr.InvalidTxnState.Code, StateEmpty}},
		{StateOngoing, outcome{0, StatePrepareCommit}, outcome{0, StatePrepareAbort}},
		{StatePrepareCommit, outcome{kerr.ConcurrentTransactions.Code, StatePrepareCommit}, outcome{kerr.InvalidTxnState.Code, StatePrepareCommit}},
		{StatePrepareAbort, outcome{kerr.InvalidTxnState.Code, StatePrepareAbort}, outcome{kerr.ConcurrentTransactions.Code, StatePrepareAbort}},
		{StateCompleteCommit, outcome{0, StateCompleteCommit}, outcome{kerr.InvalidTxnState.Code, StateCompleteCommit}},
		{StateCompleteAbort, outcome{kerr.InvalidTxnState.Code, StateCompleteAbort}, outcome{0, StateCompleteAbort}},
	}
	for _, tc := range cases {
		for _, commit := range []bool{true, false} {
			want := tc.abort
			if commit {
				want = tc.commit
			}
			t.Run(tc.from.String()+map[bool]string{true: "/commit", false: "/abort"}[commit], func(t *testing.T) {
				h := reach(t, tc.from)
				h.markers = nil
				wantCode(t, "end", h.end(id, pid, 0, commit), want.code)
				h.wantState(id, want.state)
				if tc.from == StateOngoing {
					if len(h.markers) != 1 || h.markers[0].Commit != commit || !slices.Equal(h.markers[0].Partitions, []TopicPartition{foo0}) {
						t.Fatalf("markers %+v", h.markers)
					}
				} else if len(h.markers) != 0 {
					t.Fatalf("markers %+v", h.markers)
				}
			})
		}
	}
}

func TestEndTxnPendingAndFailure(t *testing.T) {
	h := reach(t, StateOngoing)
	ch := h.endPending(id, pid, 0, true)
	wantCode(t, "while pending", codeAnswer(t, h.endPending(id, pid, 0, true)), kerr.ConcurrentTransactions.Code)
	h.complete(errAppend)
	wantCode(t, "failed append", codeAnswer(t, ch), kerr.CoordinatorNotAvailable.Code)
	h.wantState(id, StateOngoing)
	if len(h.markers) != 0 {
		t.Fatal("markers for an uncommitted prepare")
	}
}

func TestCompleteTxnIgnoresStaleJobs(t *testing.T) {
	h := reach(t, StatePrepareCommit)
	job := h.markers[0]
	stale := job
	stale.ProducerEpoch++
	var queued bool
	h.run(func(eff *effects) { queued = h.s.completeTxn(stale, h.now, eff, nil) })
	if queued || len(h.writes) != 0 {
		t.Fatal("completed a transaction of another epoch")
	}
	other := job
	other.Commit = false
	h.run(func(eff *effects) { queued = h.s.completeTxn(other, h.now, eff, nil) })
	if queued {
		t.Fatal("aborted a transaction preparing to commit")
	}
	h.run(func(eff *effects) { queued = h.s.completeTxn(job, h.now, eff, nil) })
	h.complete(nil)
	h.wantState(id, StateCompleteCommit)
	if len(h.meta(id).partitions) != 0 {
		t.Fatal("complete keeps partitions")
	}
}

func TestTimedOutTransactionIsAborted(t *testing.T) {
	h := reach(t, StateOngoing) // timeout 10s
	h.now = h.now.Add(10 * time.Second)
	h.run(func(eff *effects) { h.s.tick(h.now, false, eff) })
	if len(h.writes) != 0 {
		t.Fatal("aborted at exactly its timeout")
	}
	h.now = h.now.Add(time.Millisecond)
	h.run(func(eff *effects) { h.s.tick(h.now, false, eff) })
	h.complete(nil)
	h.wantState(id, StatePrepareAbort)
	if m := h.meta(id); m.epoch != 1 {
		t.Fatalf("epoch %d after timeout, want the fencing bump to 1", m.epoch)
	}
	if len(h.markers) != 1 || h.markers[0].Commit || h.markers[0].ProducerEpoch != 1 {
		t.Fatalf("markers %+v", h.markers)
	}
	wantCode(t, "producer commits late", h.end(id, pid, 0, true), kerr.ProducerFenced.Code)
	h.finishMarkers()
	h.wantState(id, StateCompleteAbort)
}

func TestFailedFenceKeepsBumpedEpoch(t *testing.T) {
	h := reach(t, StateOngoing)
	h.now = h.now.Add(time.Minute)
	h.run(func(eff *effects) { h.s.tick(h.now, false, eff) })
	h.complete(errAppend)
	m := h.meta(id)
	if m.state != StateOngoing || m.epoch != 1 || !m.fenceFailed {
		t.Fatalf("after failed fence: %+v fenceFailed %v", m.snapshot, m.fenceFailed)
	}
	wantCode(t, "fenced producer", h.add(id, pid, 0, foo1), kerr.ProducerFenced.Code)
	h.run(func(eff *effects) { h.s.tick(h.now, false, eff) })
	h.complete(nil)
	if m.state != StatePrepareAbort || m.epoch != 1 || m.fenceFailed {
		t.Fatalf("retried fence bumped again: %+v", m.snapshot)
	}
}

func TestExpiredIDsAreRemoved(t *testing.T) {
	for _, st := range allStates {
		t.Run(st.String(), func(t *testing.T) {
			h := reach(t, st)
			h.markers = nil
			h.now = h.now.Add(time.Hour)
			h.run(func(eff *effects) { h.s.tick(h.now, false, eff) })
			h.complete(nil)
			if st.completed() && h.s.txns[id] == nil {
				t.Fatal("expired without the expiry check")
			}
			h.now = h.now.Add(time.Hour)
			h.run(func(eff *effects) { h.s.tick(h.now, true, eff) })
			h.complete(nil)
			_, present := h.s.txns[id]
			if present == st.completed() {
				t.Fatalf("present %v after expiry", present)
			}
			if st.completed() && h.written[len(h.written)-1].value != nil {
				t.Fatal("expiry wrote no tombstone")
			}
		})
	}
}

func TestRecentlyUsedIDIsNotExpired(t *testing.T) {
	h := reach(t, StateCompleteCommit)
	h.now = h.now.Add(time.Hour - time.Millisecond)
	h.run(func(eff *effects) { h.s.tick(h.now, true, eff) })
	if len(h.writes) != 0 || h.s.txns[id] == nil {
		t.Fatal("expired before transactional.id.expiration.ms")
	}
}

func TestDescribeAndList(t *testing.T) {
	h := reach(t, StateOngoing)
	if d := h.s.describe("nope"); d.Err != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("describe unknown: %+v", d)
	}
	d := h.s.describe(id)
	if d.Err != 0 || d.State != "Ongoing" || d.ProducerID != pid || d.TimeoutMs != 10_000 || d.StartTimeMs != h.now.UnixMilli() || !slices.Equal(d.Partitions, []TopicPartition{foo0}) {
		t.Fatalf("describe: %+v", d)
	}
	h.init("u", 1000, -1, -1)
	all := h.s.list(ListFilter{MinDurationMs: -1}, h.now, nil)
	if len(all) != 2 {
		t.Fatalf("list: %+v", all)
	}
	for _, tc := range []struct {
		f    ListFilter
		want []string
	}{
		{ListFilter{States: []State{StateOngoing}, MinDurationMs: -1}, []string{id}},
		{ListFilter{States: []State{StateEmpty}, MinDurationMs: -1}, []string{"u"}},
		{ListFilter{ProducerIDs: []int64{pid + 1}, MinDurationMs: -1}, []string{"u"}},
		{ListFilter{ProducerIDs: []int64{42}, MinDurationMs: -1}, nil},
		{ListFilter{MinDurationMs: 0}, nil},
	} {
		var got []string
		for _, l := range h.s.list(tc.f, h.now, nil) {
			got = append(got, l.TransactionalID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("list %+v: %v, want %v", tc.f, got, tc.want)
		}
	}
	later := h.now.Add(5 * time.Second)
	if got := h.s.list(ListFilter{MinDurationMs: 4000}, later, nil); len(got) != 1 || got[0].TransactionalID != id {
		t.Fatalf("duration filter: %+v", got)
	}
}
