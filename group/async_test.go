package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// asyncPartition is a memPartition whose appends are answered when the
// test calls answer, as the simulation answers once the HW passes them.
type asyncPartition struct {
	*memPartition
	pending []func()
}

func (p *asyncPartition) AppendAsync(b []byte, done func(int64, error)) {
	base, err := p.memPartition.Append(context.Background(), b)
	p.pending = append(p.pending, func() { done(base, err) })
}

func (p *asyncPartition) answer(t *testing.T) {
	t.Helper()
	if len(p.pending) == 0 {
		t.Fatal("no append in flight")
	}
	done := p.pending[0]
	p.pending = p.pending[1:]
	done()
}

func startCommit(c *Coordinator, group string, offset int64) *PendingCommit {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return c.StartOffsetCommit(req)
}

func answered(t *testing.T, pc *PendingCommit) int16 {
	t.Helper()
	select {
	case <-pc.Done():
		return pc.Response(false).Topics[0].Partitions[0].ErrorCode
	default:
		t.Fatal("commit not answered")
		return 0
	}
}

// TestAsyncPartitionSteps: an AsyncPartition gets no goroutine: Step loads
// it, then appends one batch at a time, each answered through its
// callback; a resignation answers the append in flight NOT_COORDINATOR.
func TestAsyncPartitionSteps(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	c := New(Config{NumPartitions: 1, Now: clock.Now})
	defer c.Close()
	p := &asyncPartition{memPartition: &memPartition{}}
	c.OnElected(0, 1, p)
	if pc := startCommit(c, "g", 1); pc.Done() != nil || pc.Response(false).Topics[0].Partitions[0].ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatal("a commit before the first Step should answer COORDINATOR_LOAD_IN_PROGRESS at once")
	}
	c.Step() // loads
	first := startCommit(c, "g", 1)
	c.Step()
	second := startCommit(c, "g", 2)
	if first.Done() == nil || second.Done() == nil {
		t.Fatal("commits should wait for their appends")
	}
	c.Step() // the first append is in flight: the second waits
	if len(p.pending) != 1 {
		t.Fatalf("%d appends in flight, want 1", len(p.pending))
	}
	p.answer(t)
	wantCode(t, "first commit", answered(t, first), nil)
	select {
	case <-second.Done():
		t.Fatal("the second commit answered before its append")
	default:
	}
	c.Step()
	if len(p.pending) != 1 {
		t.Fatalf("%d appends in flight after the first answered, want the second", len(p.pending))
	}
	c.OnResigned(0, 1)
	p.answer(t)
	if code := answered(t, second); code != kerr.NotCoordinator.Code {
		t.Fatalf("append answered after the resignation: code %d, want NOT_COORDINATOR", code)
	}
}

// TestFaultLoadToHighWatermark: the fault hook the simulation uses
// reverts the load bound (TestLoadReadsToLogEnd is the fix's test).
func TestFaultLoadToHighWatermark(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	p := &asyncPartition{memPartition: &memPartition{}}
	load := func(faults Faults) *Coordinator {
		c := New(Config{NumPartitions: 1, Now: clock.Now, Faults: faults})
		t.Cleanup(c.Close)
		c.OnElected(0, 1, p)
		c.Step()
		return c
	}
	c := load(Faults{})
	pc := startCommit(c, "g", 5)
	c.Step()
	p.answer(t)
	wantCode(t, "commit", answered(t, pc), nil)
	c.Close()
	p.setHWLag(p.next) // the new leader's HW is still 0
	fetch := func(c *Coordinator) (int16, int64) {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = 7, "g"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		req.Topics = append(req.Topics, rt)
		resp := c.OffsetFetch(context.Background(), req)
		if resp.ErrorCode != 0 {
			return resp.ErrorCode, -1
		}
		return 0, resp.Topics[0].Partitions[0].Offset
	}
	if code, _ := fetch(load(Faults{})); code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("load above the HW: code %d, want COORDINATOR_LOAD_IN_PROGRESS until the HW reaches it", code)
	}
	if code, got := fetch(load(Faults{LoadToHighWatermark: true})); code != 0 || got != -1 {
		t.Fatalf("load to the HW (the fault): code %d offset %d, want -1 (the commit forgotten)", code, got)
	}
	p.setHWLag(0)
	if code, got := fetch(load(Faults{})); code != 0 || got != 5 {
		t.Fatalf("load to the log end once committed: code %d offset %d, want 5", code, got)
	}
}
