package txn

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// harness drives a shard the way the Coordinator does, with a manual
// clock, producer ids from a counter and appends completed only when told.
type harness struct {
	t       *testing.T
	s       *shard
	now     time.Time
	nextID  int64
	writes  []write
	written []record
	markers []MarkerJob
}

const testMaxTimeoutMs = 60_000

func newHarness(t *testing.T) *harness {
	t.Helper()
	l := limits{
		maxTimeoutMs:    testMaxTimeoutMs,
		idExpirationMs:  time.Hour.Milliseconds(),
		offsetsPartsFor: func(string) int32 { return 7 },
	}
	return &harness{t: t, s: newShard(3, 5, l), now: time.UnixMilli(1_700_000_000_000), nextID: 1000}
}

func (h *harness) run(fn func(eff *effects)) {
	var eff effects
	fn(&eff)
	h.writes = append(h.writes, eff.writes...)
	h.markers = append(h.markers, eff.markers...)
	eff.deliver()
}

// complete finishes every queued write with err (nil: committed).
func (h *harness) complete(err error) {
	h.t.Helper()
	for len(h.writes) > 0 {
		w := h.writes[0]
		h.writes = h.writes[1:]
		if err == nil {
			h.written = append(h.written, w.record)
		}
		h.run(func(eff *effects) { w.done(h.s, err, h.now, eff) })
		if w.notify != nil {
			w.notify <- err
		}
	}
}

// init sends InitProducerId, allocating an id when the step asks, and
// commits its write unless held.
func (h *harness) initPending(id string, timeoutMs int32, pid int64, epoch int16) chan InitResult {
	h.t.Helper()
	ch := make(chan InitResult, 1)
	a := initArgs{txnID: id, timeoutMs: timeoutMs, expectedID: pid, expectedEpoch: epoch, reply: func(r InitResult) { ch <- r }}
	h.withProducerID(func(newID int64, eff *effects) bool {
		a.newProducerID = newID
		return h.s.initProducerID(a, h.now, eff)
	})
	return ch
}

// withProducerID runs a step that may ask for a fresh producer id, as the
// Coordinator does, handing it the next id of the counter.
func (h *harness) withProducerID(step func(newID int64, eff *effects) (needID bool)) {
	h.t.Helper()
	newID := noProducerID
	for range 2 {
		need := false
		h.run(func(eff *effects) { need = step(newID, eff) })
		if !need {
			return
		}
		newID = h.nextID
		h.nextID++
	}
	h.t.Fatal("a step asked for a producer id twice")
}

func (h *harness) init(id string, timeoutMs int32, pid int64, epoch int16) InitResult {
	h.t.Helper()
	ch := h.initPending(id, timeoutMs, pid, epoch)
	h.complete(nil)
	return h.answer(ch)
}

func (h *harness) answer(ch chan InitResult) InitResult {
	h.t.Helper()
	select {
	case r := <-ch:
		return r
	default:
		h.t.Fatal("no InitProducerId answer")
		return InitResult{}
	}
}

func codeAnswer(t *testing.T, ch chan int16) int16 {
	t.Helper()
	select {
	case c := <-ch:
		return c
	default:
		t.Fatal("no answer")
		return 0
	}
}

func (h *harness) addPending(id string, pid int64, epoch int16, tps ...TopicPartition) chan int16 {
	ch := make(chan int16, 1)
	h.run(func(eff *effects) {
		h.s.addPartitions(id, pid, epoch, tps, TV0, h.now, eff, func(c int16) { ch <- c })
	})
	return ch
}

func (h *harness) add(id string, pid int64, epoch int16, tps ...TopicPartition) int16 {
	h.t.Helper()
	ch := h.addPending(id, pid, epoch, tps...)
	h.complete(nil)
	return codeAnswer(h.t, ch)
}

func (h *harness) endPending(id string, pid int64, epoch int16, commit bool) chan int16 {
	ch := make(chan int16, 1)
	h.run(func(eff *effects) {
		h.s.endTxn(id, pid, epoch, commit, h.now, eff, func(c int16) { ch <- c })
	})
	return ch
}

func (h *harness) end(id string, pid int64, epoch int16, commit bool) int16 {
	h.t.Helper()
	ch := h.endPending(id, pid, epoch, commit)
	h.complete(nil)
	return codeAnswer(h.t, ch)
}

// finishMarkers pretends every queued marker job was written and
// completes the transactions.
func (h *harness) finishMarkers() {
	h.t.Helper()
	jobs := h.markers
	h.markers = nil
	for _, j := range jobs {
		h.run(func(eff *effects) { h.s.completeTxn(j, h.now, eff, nil) })
	}
	h.complete(nil)
}

func (h *harness) meta(id string) *txnMetadata {
	h.t.Helper()
	m := h.s.txns[id]
	if m == nil {
		h.t.Fatalf("no transactional id %q", id)
	}
	return m
}

func (h *harness) wantState(id string, st State) {
	h.t.Helper()
	if got := h.meta(id).state; got != st {
		h.t.Fatalf("%s: state %v, want %v", id, got, st)
	}
}

func wantCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: code %d (%v), want %d (%v)", what, got, kerr.ErrorForCode(got), want, kerr.ErrorForCode(want))
	}
}

var errAppend = errors.New("append failed")

func tp(topic string, p int32) TopicPartition { return TopicPartition{topic, p} }
