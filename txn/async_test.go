package txn

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/internal/testutil"
)

// asyncPartition is a memPartition whose appends commit only when the
// test says so (completeAppends), as the simulation's do.
type asyncPartition struct {
	*memPartition
	pending []func()
}

func (p *asyncPartition) AppendAsync(b []byte, done func(int64, error)) {
	p.pending = append(p.pending, func() { done(p.memPartition.Append(context.Background(), b)) })
}

func (p *asyncPartition) completeAppends() int {
	n := len(p.pending)
	for len(p.pending) > 0 {
		f := p.pending[0]
		p.pending = p.pending[1:]
		f()
	}
	return n
}

// asyncSender answers marker requests only when the test says so, with
// fakeSender's codes.
type asyncSender struct {
	fakeSender
	pending []func()
}

func (s *asyncSender) WriteMarkersAsync(job MarkerJob, done func(map[TopicPartition]int16)) {
	s.pending = append(s.pending, func() { done(s.WriteMarkers(context.Background(), job)) })
}

func (s *asyncSender) answer() int {
	n := len(s.pending)
	for len(s.pending) > 0 {
		f := s.pending[0]
		s.pending = s.pending[1:]
		f()
	}
	return n
}

type stepHarness struct {
	t      *testing.T
	c      *Coordinator
	clock  *testutil.Clock
	p      *asyncPartition
	sender *asyncSender
	nextID int64
}

func newStepHarness(t *testing.T, p *memPartition, faults Faults) *stepHarness {
	h := &stepHarness{t: t, clock: testutil.NewClock(time.UnixMilli(1_700_000_000_000)), p: &asyncPartition{memPartition: p}, sender: &asyncSender{}, nextID: 4000}
	h.c = New(Config{
		NumPartitions: 1, MarkerRetryBackoff: 100 * time.Millisecond, AbortTimedOutInterval: time.Second,
		Markers: h.sender, Now: h.clock.Now, Faults: faults,
		// Called on the test's goroutine only: the step form starts none.
		NewProducerID: func(context.Context) (int64, error) { h.nextID++; return h.nextID, nil },
	})
	t.Cleanup(h.c.Close)
	return h
}

// settle steps until nothing is left to do: every append committed and
// every marker request answered, as they come.
func (h *stepHarness) settle() {
	h.t.Helper()
	for range 100 {
		h.c.Step()
		if h.p.completeAppends()+h.sender.answer() == 0 {
			h.c.Step()
			if len(h.p.pending)+len(h.sender.pending) == 0 {
				return
			}
		}
	}
	h.t.Fatal("the coordinator never settles")
}

func pollNow[T any](t *testing.T, what string, p *Pending[T]) T {
	t.Helper()
	r, ok := p.Poll()
	if !ok {
		t.Fatalf("%s: no answer", what)
	}
	return r
}

// TestStepFormCommitsWithoutGoroutines drives a commit through the step
// form: nothing is answered before its record is committed, and the
// markers go out and complete only through Step.
func TestStepFormCommitsWithoutGoroutines(t *testing.T) {
	ctx := context.Background()
	h := newStepHarness(t, &memPartition{}, Faults{})
	h.c.OnElected(0, 3, h.p)
	wantCode(t, "before the first Step", h.c.Describe("tx").Err, kerr.CoordinatorLoadInProgress.Code)
	h.settle()

	init := h.c.StartInitProducerID(ctx, "tx", 10_000, -1, -1)
	if _, ok := init.Poll(); ok {
		t.Fatal("InitProducerId answered before its record was appended")
	}
	h.settle()
	r := pollNow(t, "init", init)
	if r.Err != 0 || r.ProducerID != 4001 || r.ProducerEpoch != 0 {
		t.Fatalf("init: %+v", r)
	}
	add := h.c.StartAddPartitions("tx", r.ProducerID, 0, []TopicPartition{foo0}, TV0)
	h.settle()
	wantCode(t, "add", pollNow(t, "add", add), 0)

	end := h.c.StartEndTxn(ctx, "tx", r.ProducerID, 0, true, TV0)
	h.c.Step()
	h.p.completeAppends() // PrepareCommit
	wantCode(t, "end", pollNow(t, "end", end).Err, 0)
	if d := h.c.Describe("tx"); d.State != StatePrepareCommit.String() {
		t.Fatalf("after EndTxn: %s", d.State)
	}
	h.c.Step() // the marker request goes out
	if len(h.sender.pending) != 1 {
		t.Fatalf("marker requests %d, want 1", len(h.sender.pending))
	}
	h.settle()
	if d := h.c.Describe("tx"); d.State != StateCompleteCommit.String() {
		t.Fatalf("after the markers: %s", d.State)
	}
	if jobs := h.sender.sent(); len(jobs) != 1 || !jobs[0].Commit || jobs[0].CoordinatorEpoch != 3 {
		t.Fatalf("markers %+v", jobs)
	}
}

// TestStepFormRetriesMarkersAfterBackoff: a failed round is sent again
// only once MarkerRetryBackoff has passed on the injected clock.
func TestStepFormRetriesMarkersAfterBackoff(t *testing.T) {
	ctx := context.Background()
	h := newStepHarness(t, &memPartition{}, Faults{})
	h.sender.respond = func(_ MarkerJob, _ TopicPartition, attempt int) int16 {
		if attempt == 1 {
			return kerr.NotLeaderForPartition.Code
		}
		return 0
	}
	h.c.OnElected(0, 1, h.p)
	h.settle()
	r := h.c.StartInitProducerID(ctx, "tx", 10_000, -1, -1)
	h.settle()
	pid := pollNow(t, "init", r).ProducerID
	h.c.StartAddPartitions("tx", pid, 0, []TopicPartition{foo0}, TV0)
	h.settle()
	h.c.StartEndTxn(ctx, "tx", pid, 0, false, TV0)
	h.settle()
	if d := h.c.Describe("tx"); d.State != StatePrepareAbort.String() {
		t.Fatalf("after a refused round: %s", d.State)
	}
	h.clock.Advance(100 * time.Millisecond)
	h.settle()
	if d := h.c.Describe("tx"); d.State != StateCompleteAbort.String() {
		t.Fatalf("after the backoff: %s", d.State)
	}
}

// TestStepFormTickAbortsTimedOutTransaction: Tick at the injected clock
// fences and aborts a transaction past its timeout.
func TestStepFormTickAbortsTimedOutTransaction(t *testing.T) {
	ctx := context.Background()
	h := newStepHarness(t, &memPartition{}, Faults{})
	h.c.OnElected(0, 1, h.p)
	h.settle()
	r := h.c.StartInitProducerID(ctx, "tx", 1_000, -1, -1)
	h.settle()
	pid := pollNow(t, "init", r).ProducerID
	h.c.StartAddPartitions("tx", pid, 0, []TopicPartition{foo0}, TV0)
	h.settle()
	h.c.Tick()
	h.settle()
	if d := h.c.Describe("tx"); d.State != StateOngoing.String() {
		t.Fatalf("before the timeout: %s", d.State)
	}
	h.clock.Advance(1001 * time.Millisecond)
	h.c.Tick()
	h.settle()
	d := h.c.Describe("tx")
	if d.State != StateCompleteAbort.String() || d.ProducerEpoch != 1 {
		t.Fatalf("after the timeout: %+v", d)
	}
	if jobs := h.sender.sent(); len(jobs) != 1 || jobs[0].Commit || jobs[0].ProducerEpoch != 1 {
		t.Fatalf("markers %+v", jobs)
	}
}

// TestStepFormFailoverResumesPrepared: a coordinator that loads a
// PrepareCommit its predecessor left sends its markers and completes it;
// with Faults.NoResumeOnLoad it hangs.
func TestStepFormFailoverResumesPrepared(t *testing.T) {
	for _, fault := range []bool{false, true} {
		ctx := context.Background()
		p := &memPartition{}
		a := newStepHarness(t, p, Faults{})
		a.c.OnElected(0, 1, a.p)
		a.settle()
		r := a.c.StartInitProducerID(ctx, "tx", 10_000, -1, -1)
		a.settle()
		pid := pollNow(t, "init", r).ProducerID
		a.c.StartAddPartitions("tx", pid, 0, []TopicPartition{foo0}, TV0)
		a.settle()
		a.c.StartEndTxn(ctx, "tx", pid, 0, true, TV0)
		a.c.Step()
		a.p.completeAppends() // PrepareCommit; its markers never go out
		a.c.OnResigned(0, 1)

		b := newStepHarness(t, p, Faults{NoResumeOnLoad: fault})
		b.c.OnElected(0, 2, b.p)
		b.settle()
		want := StateCompleteCommit
		if fault {
			want = StatePrepareCommit
		}
		if d := b.c.Describe("tx"); d.State != want.String() {
			t.Fatalf("NoResumeOnLoad %v: after failover %s, want %v", fault, d.State, want)
		}
	}
}
