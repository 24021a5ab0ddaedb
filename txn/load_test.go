package txn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/internal/testutil"
)

// leavePrepared has a coordinator over p commit a transaction of "tx" on
// foo0 up to its PrepareCommit, whose markers never go out, and resign; it
// returns the producer id.
func leavePrepared(t *testing.T, p *memPartition) int64 {
	t.Helper()
	ctx := context.Background()
	a := newCoord(t, &fakeSender{respond: func(MarkerJob, TopicPartition, int) int16 { return kerr.NotLeaderForPartition.Code }})
	a.elect(1, p)
	r := a.c.InitProducerID(ctx, "tx", 10_000, -1, -1)
	wantCode(t, "add", a.c.AddPartitions(ctx, "tx", r.ProducerID, 0, []TopicPartition{foo0}, TV0), 0)
	wantCode(t, "commit", a.c.EndTxn(ctx, "tx", r.ProducerID, 0, true, TV0).Err, 0)
	a.c.OnResigned(0, 1)
	return r.ProducerID
}

// loadSettled waits until ch's load either waits for p's HW or serves.
func loadSettled(ch *coordHarness, p *memPartition) {
	ch.t.Helper()
	testutil.Eventually(ch.t, 10*time.Second, func() error {
		if p.waiters() == 0 && ch.c.Describe("tx").Err == kerr.CoordinatorLoadInProgress.Code {
			return errors.New("still loading")
		}
		return nil
	})
}

// TestCoordinatorActsOnLoadOnceCommitted: a coordinator elected while its
// predecessor's PrepareCommit is above the new leader's HW answers
// COORDINATOR_LOAD_IN_PROGRESS and sends no marker until the HW reaches
// it: a failover losing the record would have the next coordinator decide
// the transaction again, possibly as an abort (seed 135). Once the HW is
// there it serves and resumes the markers.
func TestCoordinatorActsOnLoadOnceCommitted(t *testing.T) {
	ctx := context.Background()
	p := &memPartition{}
	pid := leavePrepared(t, p)
	p.holdHighWatermark(p.LogEndOffset() - 1)

	b := newCoord(t, &fakeSender{})
	b.c.OnElected(0, 2, p)
	loadSettled(b, p)
	wantCode(t, "describe below the loaded end", b.c.Describe("tx").Err, kerr.CoordinatorLoadInProgress.Code)
	wantCode(t, "init below the loaded end", b.c.InitProducerID(ctx, "tx", 10_000, -1, -1).Err, kerr.CoordinatorLoadInProgress.Code)
	if jobs := b.sender.sent(); len(jobs) != 0 {
		t.Fatalf("markers sent from a load above the HW: %+v", jobs)
	}

	p.releaseHighWatermark()
	d := b.waitState("tx", StateCompleteCommit)
	if d.ProducerID != pid {
		t.Fatalf("after the HW caught up: %+v", d)
	}
	if jobs := b.sender.sent(); len(jobs) != 1 || !jobs[0].Commit || jobs[0].CoordinatorEpoch != 2 {
		t.Fatalf("resumed markers %+v", jobs)
	}
}

// TestCoordinatorResignsWhileWaitingForHW: a coordinator resigning while
// its load waits for the HW stops the wait (OnResigned returns once its
// goroutine has), answers NOT_COORDINATOR and never sends the markers.
func TestCoordinatorResignsWhileWaitingForHW(t *testing.T) {
	p := &memPartition{}
	leavePrepared(t, p)
	p.holdHighWatermark(p.LogEndOffset() - 1)

	b := newCoord(t, &fakeSender{})
	b.c.OnElected(0, 2, p)
	loadSettled(b, p)
	if n := p.waiters(); n != 1 {
		t.Fatalf("%d waits for the HW, want 1 (the load's)", n)
	}
	b.c.OnResigned(0, 2)
	if n := p.waiters(); n != 0 {
		t.Fatalf("%d waits for the HW after resigning", n)
	}
	wantCode(t, "describe after resigning", b.c.Describe("tx").Err, kerr.NotCoordinator.Code)
	p.releaseHighWatermark()
	if jobs := b.sender.sent(); len(jobs) != 0 {
		t.Fatalf("markers sent by a coordinator that resigned while loading: %+v", jobs)
	}
}

// TestStepFormActsOnLoadOnceCommitted is the step driver's: no Step
// installs a load above the HW, so AddPartitionsToTxn is not answered
// from the predecessor's uncommitted record (seed 901: a failover that
// loses it leaves the batches the producer then wrote hanging) and no
// marker goes out; with Faults.ActAboveHighWatermark both happen at once.
func TestStepFormActsOnLoadOnceCommitted(t *testing.T) {
	for _, fault := range []bool{false, true} {
		ctx := context.Background()
		p := &memPartition{}
		a := newStepHarness(t, p, Faults{})
		a.c.OnElected(0, 1, a.p)
		a.settle()
		init := a.c.StartInitProducerID(ctx, "tx", 10_000, -1, -1)
		a.settle()
		pid := pollNow(t, "init", init).ProducerID
		add := a.c.StartAddPartitions("tx", pid, 0, []TopicPartition{foo0}, TV0)
		a.settle()
		wantCode(t, "add", pollNow(t, "add", add), 0)
		a.c.OnResigned(0, 1)
		p.holdHighWatermark(p.LogEndOffset() - 1) // the Ongoing record with foo0

		b := newStepHarness(t, p, Faults{ActAboveHighWatermark: fault})
		b.c.OnElected(0, 2, b.p)
		b.settle()
		add = b.c.StartAddPartitions("tx", pid, 0, []TopicPartition{foo0}, TV0)
		b.settle()
		if fault {
			wantCode(t, "add with the fault", pollNow(t, "add", add), 0)
			continue
		}
		wantCode(t, "add below the loaded end", pollNow(t, "add", add), kerr.CoordinatorLoadInProgress.Code)

		p.releaseHighWatermark()
		b.settle()
		add = b.c.StartAddPartitions("tx", pid, 0, []TopicPartition{foo0}, TV0)
		b.settle()
		wantCode(t, "add once committed", pollNow(t, "add", add), 0)
		end := b.c.StartEndTxn(ctx, "tx", pid, 0, false, TV0)
		b.settle()
		wantCode(t, "abort", pollNow(t, "abort", end).Err, 0)
		if jobs := b.sender.sent(); len(jobs) != 1 || jobs[0].Commit || jobs[0].CoordinatorEpoch != 2 {
			t.Fatalf("markers %+v", jobs)
		}
	}
}

// TestStepFormResumesMarkersOnceCommitted: the step driver resumes a
// prepared transaction's markers only at the first Step after the HW
// reached the loaded end; with the fault, at once.
func TestStepFormResumesMarkersOnceCommitted(t *testing.T) {
	for _, fault := range []bool{false, true} {
		p := &memPartition{}
		leavePrepared(t, p)
		p.holdHighWatermark(p.LogEndOffset() - 1)

		b := newStepHarness(t, p, Faults{ActAboveHighWatermark: fault})
		b.c.OnElected(0, 2, b.p)
		b.settle()
		if fault {
			if d := b.c.Describe("tx"); d.State != StateCompleteCommit.String() {
				t.Fatalf("with the fault: %+v", d)
			}
			continue
		}
		wantCode(t, "describe below the loaded end", b.c.Describe("tx").Err, kerr.CoordinatorLoadInProgress.Code)
		if jobs := b.sender.sent(); len(jobs) != 0 {
			t.Fatalf("markers sent from a load above the HW: %+v", jobs)
		}
		p.releaseHighWatermark()
		b.settle()
		if d := b.c.Describe("tx"); d.State != StateCompleteCommit.String() {
			t.Fatalf("after the HW caught up: %+v", d)
		}
		if jobs := b.sender.sent(); len(jobs) != 1 || !jobs[0].Commit || jobs[0].CoordinatorEpoch != 2 {
			t.Fatalf("resumed markers %+v", jobs)
		}
	}
}
