package txn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
)

// memPartition is a __transaction_state partition in memory: every append
// is committed at once, unless failAppends is set. holdHW keeps the HW at
// hw instead, as on a new leader whose followers have not fetched yet,
// until releaseHighWatermark lets it follow the log end again.
type memPartition struct {
	mu          sync.Mutex
	batches     [][]byte
	offsets     []int64
	next        int64
	failAppends error
	holdHW      bool
	hw          int64
	// hwMoved is closed when the HW is released; hwWaiters counts the
	// calls of WaitForHighWatermark blocked now.
	hwMoved   chan struct{}
	hwWaiters int
}

func (p *memPartition) HighWatermark() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.highWatermarkLocked()
}

func (p *memPartition) highWatermarkLocked() int64 {
	if p.holdHW {
		return p.hw
	}
	return p.next
}

func (p *memPartition) WaitForHighWatermark(ctx context.Context, offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.highWatermarkLocked() < offset {
		if p.hwMoved == nil {
			p.hwMoved = make(chan struct{})
		}
		moved := p.hwMoved
		p.hwWaiters++
		p.mu.Unlock()
		var err error
		select {
		case <-moved:
		case <-ctx.Done():
			err = ctx.Err()
		}
		p.mu.Lock()
		p.hwWaiters--
		if err != nil {
			return err
		}
	}
	return nil
}

// holdHighWatermark keeps the HW at hw from now on.
func (p *memPartition) holdHighWatermark(hw int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdHW, p.hw = true, hw
}

// releaseHighWatermark lets the HW follow the log end again.
func (p *memPartition) releaseHighWatermark() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdHW = false
	if p.hwMoved != nil {
		close(p.hwMoved)
		p.hwMoved = nil
	}
}

func (p *memPartition) waiters() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hwWaiters
}

func (p *memPartition) Append(_ context.Context, b []byte) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failAppends != nil {
		return -1, p.failAppends
	}
	h, err := batch.ParseHeader(b)
	if err != nil {
		return -1, err
	}
	b = slices.Clone(b)
	batch.SetBaseOffset(b, p.next)
	base := p.next
	p.batches = append(p.batches, b)
	p.offsets = append(p.offsets, base)
	p.next += int64(h.LastOffsetDelta) + 1
	return base, nil
}

func (p *memPartition) Read(offset int64, maxBytes int32) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for i, b := range p.batches {
		if p.offsets[i] < offset {
			continue
		}
		if len(out) > 0 && len(out)+len(b) > int(maxBytes) {
			break
		}
		out = append(out, b...)
	}
	return out, nil
}

func (p *memPartition) LogStartOffset() int64 { return 0 }
func (p *memPartition) LogEndOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}

// fakeSender records marker jobs and answers each partition with the
// code of respond (0 when respond is nil).
type fakeSender struct {
	mu      sync.Mutex
	jobs    []MarkerJob
	respond func(job MarkerJob, tp TopicPartition, attempt int) int16
}

func (f *fakeSender) WriteMarkers(_ context.Context, job MarkerJob) map[TopicPartition]int16 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs = append(f.jobs, job)
	out := map[TopicPartition]int16{}
	for _, tp := range job.Partitions {
		if f.respond != nil {
			out[tp] = f.respond(job, tp, len(f.jobs))
		} else {
			out[tp] = 0
		}
	}
	return out
}

func (f *fakeSender) sent() []MarkerJob {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.jobs)
}

type coordHarness struct {
	t      *testing.T
	c      *Coordinator
	clock  *testutil.Clock
	sender *fakeSender
	nextID int64
}

func newCoord(t *testing.T, sender *fakeSender) *coordHarness {
	t.Helper()
	ch := &coordHarness{t: t, clock: testutil.NewClock(time.UnixMilli(1_700_000_000_000)), sender: sender, nextID: 4000}
	var mu sync.Mutex
	ch.c = New(Config{
		NumPartitions:      1,
		MarkerRetryBackoff: time.Millisecond,
		Markers:            sender,
		Now:                ch.clock.Now,
		NewProducerID: func(context.Context) (int64, error) {
			mu.Lock()
			defer mu.Unlock()
			ch.nextID++
			return ch.nextID, nil
		},
	})
	t.Cleanup(ch.c.Close)
	return ch
}

// elect makes the coordinator lead partition 0 over p and waits for the
// load.
func (ch *coordHarness) elect(epoch int32, p Partition) {
	ch.t.Helper()
	ch.c.OnElected(0, epoch, p)
	testutil.Eventually(ch.t, 10*time.Second, func() error {
		if d := ch.c.Describe("probe"); d.Err == kerr.CoordinatorLoadInProgress.Code {
			return errors.New("still loading")
		}
		return nil
	})
}

func (ch *coordHarness) waitState(txnID string, want State) Description {
	ch.t.Helper()
	var d Description
	testutil.Eventually(ch.t, 10*time.Second, func() error {
		d = ch.c.Describe(txnID)
		if d.Err != 0 || d.State != want.String() {
			return fmt.Errorf("%s: err %d state %s, want %v", txnID, d.Err, d.State, want)
		}
		return nil
	})
	return d
}

func TestCoordinatorCommitSendsMarkersThenCompletes(t *testing.T) {
	ctx := context.Background()
	ch := newCoord(t, &fakeSender{})
	ch.elect(9, &memPartition{})
	r := ch.c.InitProducerID(ctx, "tx", 10_000, -1, -1)
	if r.Err != 0 || r.ProducerID != 4001 || r.ProducerEpoch != 0 {
		t.Fatalf("init: %+v", r)
	}
	wantCode(t, "add", ch.c.AddPartitions(ctx, "tx", r.ProducerID, 0, []TopicPartition{foo0, foo1}, TV0), 0)
	wantCode(t, "add offsets", ch.c.AddOffsets(ctx, "tx", r.ProducerID, 0, "g"), 0)
	d := ch.c.Describe("tx")
	want := []TopicPartition{tp(OffsetsTopic, ch.c.limits.offsetsPartsFor("g")), foo0, foo1}
	if d.State != "Ongoing" || !slices.Equal(d.Partitions, want) {
		t.Fatalf("describe: %+v", d)
	}
	wantCode(t, "commit", ch.c.EndTxn(ctx, "tx", r.ProducerID, 0, true, TV0).Err, 0)
	ch.waitState("tx", StateCompleteCommit)
	jobs := ch.sender.sent()
	if len(jobs) != 1 || !jobs[0].Commit || jobs[0].CoordinatorEpoch != 9 || jobs[0].ProducerID != 4001 || !slices.Equal(jobs[0].Partitions, want) {
		t.Fatalf("marker jobs %+v", jobs)
	}
	if l, code := ch.c.List(ListFilter{MinDurationMs: -1}); code != 0 || len(l) != 1 || l[0].State != "CompleteCommit" {
		t.Fatalf("list: %+v %d", l, code)
	}
}

func TestCoordinatorRetriesMarkers(t *testing.T) {
	ctx := context.Background()
	sender := &fakeSender{respond: func(_ MarkerJob, tp TopicPartition, attempt int) int16 {
		if tp == foo1 && attempt < 3 {
			return kerr.NotLeaderForPartition.Code
		}
		return 0
	}}
	ch := newCoord(t, sender)
	ch.elect(1, &memPartition{})
	r := ch.c.InitProducerID(ctx, "tx", 10_000, -1, -1)
	ch.c.AddPartitions(ctx, "tx", r.ProducerID, 0, []TopicPartition{foo0, foo1}, TV0)
	wantCode(t, "abort", ch.c.EndTxn(ctx, "tx", r.ProducerID, 0, false, TV0).Err, 0)
	ch.waitState("tx", StateCompleteAbort)
	jobs := sender.sent()
	if len(jobs) != 3 || !slices.Equal(jobs[1].Partitions, []TopicPartition{foo1}) || jobs[0].Commit {
		t.Fatalf("marker jobs %+v", jobs)
	}
}

func TestCoordinatorStopsMarkersWhenFenced(t *testing.T) {
	ctx := context.Background()
	sender := &fakeSender{respond: func(MarkerJob, TopicPartition, int) int16 { return kerr.TransactionCoordinatorFenced.Code }}
	ch := newCoord(t, sender)
	ch.elect(1, &memPartition{})
	r := ch.c.InitProducerID(ctx, "tx", 10_000, -1, -1)
	ch.c.AddPartitions(ctx, "tx", r.ProducerID, 0, []TopicPartition{foo0}, TV0)
	wantCode(t, "commit", ch.c.EndTxn(ctx, "tx", r.ProducerID, 0, true, TV0).Err, 0)
	testutil.Eventually(t, 10*time.Second, func() error {
		if len(sender.sent()) == 0 {
			return errors.New("no markers sent")
		}
		return nil
	})
	// Close waits for the sender goroutine: after it, nothing changes.
	ch.c.OnResigned(0, -1)
	if n := len(sender.sent()); n != 1 {
		t.Fatalf("%d marker rounds after a fenced answer", n)
	}
}

// TestCoordinatorFailoverCompletesPreparedTransaction: a coordinator that
// loses its partition after PrepareCommit leaves the markers to the next
// one, which loads the partition to its log end and finishes the commit.
func TestCoordinatorFailoverCompletesPreparedTransaction(t *testing.T) {
	ctx := context.Background()
	p := &memPartition{}
	stuck := &fakeSender{respond: func(MarkerJob, TopicPartition, int) int16 { return kerr.NotLeaderForPartition.Code }}
	a := newCoord(t, stuck)
	a.elect(1, p)
	r := a.c.InitProducerID(ctx, "tx", 10_000, -1, -1)
	a.c.AddPartitions(ctx, "tx", r.ProducerID, 0, []TopicPartition{foo0}, TV0)
	wantCode(t, "commit", a.c.EndTxn(ctx, "tx", r.ProducerID, 0, true, TV0).Err, 0)
	a.c.OnResigned(0, 1)
	wantCode(t, "describe after resigning", a.c.Describe("tx").Err, kerr.NotCoordinator.Code)

	b := newCoord(t, &fakeSender{})
	b.elect(2, p)
	d := b.waitState("tx", StateCompleteCommit)
	if d.ProducerID != r.ProducerID || d.ProducerEpoch != 0 {
		t.Fatalf("after failover: %+v", d)
	}
	jobs := b.sender.sent()
	if len(jobs) != 1 || jobs[0].CoordinatorEpoch != 2 || !jobs[0].Commit {
		t.Fatalf("resumed markers %+v", jobs)
	}
	// The new coordinator continues the id: the next init bumps the epoch.
	if r2 := b.c.InitProducerID(ctx, "tx", 10_000, -1, -1); r2.Err != 0 || r2.ProducerID != r.ProducerID || r2.ProducerEpoch != 1 {
		t.Fatalf("init after failover: %+v", r2)
	}
}

func TestCoordinatorLoadReplaysTombstones(t *testing.T) {
	ctx := context.Background()
	p := &memPartition{}
	a := newCoord(t, &fakeSender{})
	a.elect(1, p)
	a.c.InitProducerID(ctx, "gone", 10_000, -1, -1)
	a.c.InitProducerID(ctx, "kept", 10_000, -1, -1)
	a.clock.Advance(8 * 24 * time.Hour)
	a.c.InitProducerID(ctx, "kept", 10_000, -1, -1)
	a.c.tick(true)
	testutil.Eventually(t, 10*time.Second, func() error {
		if d := a.c.Describe("gone"); d.Err != kerr.TransactionalIDNotFound.Code {
			return fmt.Errorf("gone: %+v", d)
		}
		return nil
	})
	a.c.Close()
	b := newCoord(t, &fakeSender{})
	b.elect(2, p)
	if d := b.c.Describe("gone"); d.Err != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("expired id reloaded: %+v", d)
	}
	if d := b.c.Describe("kept"); d.Err != 0 || d.ProducerEpoch != 1 || d.State != "Empty" {
		t.Fatalf("kept: %+v", d)
	}
}

func TestCoordinatorAppendFailureAnswersAndKeepsState(t *testing.T) {
	ctx := context.Background()
	p := &memPartition{}
	ch := newCoord(t, &fakeSender{})
	ch.elect(1, p)
	r := ch.c.InitProducerID(ctx, "tx", 10_000, -1, -1)
	p.mu.Lock()
	p.failAppends = kerr.NotEnoughReplicas
	p.mu.Unlock()
	wantCode(t, "add", ch.c.AddPartitions(ctx, "tx", r.ProducerID, 0, []TopicPartition{foo0}, TV0), kerr.CoordinatorNotAvailable.Code)
	if d := ch.c.Describe("tx"); d.State != "Empty" {
		t.Fatalf("state after failed append: %+v", d)
	}
}

func TestCoordinatorNotCoordinator(t *testing.T) {
	ch := newCoord(t, &fakeSender{})
	if r := ch.c.InitProducerID(context.Background(), "tx", 1000, -1, -1); r.Err != kerr.NotCoordinator.Code {
		t.Fatalf("init without the partition: %+v", r)
	}
	if _, code := ch.c.List(ListFilter{}); code != 0 {
		t.Fatalf("list with no partitions: %d", code)
	}
}

// TestCoordinatorIgnoresRepeatedLeadership: the same leadership announced
// again keeps the loaded partition; a new epoch reloads it.
func TestCoordinatorIgnoresRepeatedLeadership(t *testing.T) {
	p := &memPartition{}
	ch := newCoord(t, &fakeSender{})
	ch.elect(3, p)
	loaded := ch.c.partitions()[0]
	ch.c.OnElected(0, 3, p)
	if got := ch.c.partitions()[0]; got != loaded {
		t.Fatal("the same leadership reloaded the partition")
	}
	ch.c.OnElected(0, 2, p)
	if got := ch.c.partitions()[0]; got != loaded {
		t.Fatal("an older epoch replaced the partition")
	}
	ch.elect(4, p)
	if got := ch.c.partitions()[0]; got == loaded || got.epoch != 4 {
		t.Fatal("a new epoch kept the old partition state")
	}
}
