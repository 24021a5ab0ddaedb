package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These tests run franz-go consumer groups against an in-process broker
// while a producer keeps writing, and check what a group promises: every
// record is consumed, nothing committed is delivered again, no partition
// has two owners in one generation, and the committed offsets at the end
// are the log end offsets.

// tpo names one record of the test topic.
type tpo struct {
	p int32
	o int64
}

// groupRun is the bookkeeping of one scenario, shared by the producer, the
// members' poll loops and their rebalance callbacks.
type groupRun struct {
	topic, group string

	mu         sync.Mutex
	partitions int32 // grows with CreatePartitions
	produced   map[tpo]string
	consumed   map[tpo]string
	times      map[tpo]int
	total      int // records consumed, counting repeats
	// committed is the highest offset a successful commit stored per
	// partition; a record below it must never be delivered again.
	committed   map[int32]int64
	redelivered []string
	unowned     []string // records a member consumed from a partition it did not own
	owned       map[string]map[int32]bool
	// generations holds, per generation, each member's partitions after
	// its SyncGroup of that generation (kgo calls OnPartitionsAssigned
	// after every sync, even when nothing was added), by member name or,
	// for a static member's successor, by the name of the member it
	// replaced.
	generations map[int32]map[string][]int32
	successorOf map[string]string
}

func newGroupRun(topic, group string, partitions int32) *groupRun {
	return &groupRun{
		topic: topic, group: group, partitions: partitions,
		produced:    map[tpo]string{},
		consumed:    map[tpo]string{},
		times:       map[tpo]int{},
		committed:   map[int32]int64{},
		owned:       map[string]map[int32]bool{},
		generations: map[int32]map[string][]int32{},
		successorOf: map[string]string{},
	}
}

// produce writes one record per partition every few milliseconds until
// stop is closed.
func (r *groupRun) produce(cl *kgo.Client, stop <-chan struct{}) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
		n := r.numPartitions()
		recs := make([]*kgo.Record, n)
		for p := range n {
			recs[p] = &kgo.Record{Topic: r.topic, Partition: p, Value: []byte(strconv.Itoa(i) + "/" + strconv.Itoa(int(p)))}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res := cl.ProduceSync(ctx, recs...)
		cancel()
		if err := res.FirstErr(); err != nil {
			return fmt.Errorf("produce round %d: %w", i, err)
		}
		r.mu.Lock()
		for _, pr := range res {
			r.produced[tpo{pr.Record.Partition, pr.Record.Offset}] = string(pr.Record.Value)
		}
		r.mu.Unlock()
	}
}

// startProducer runs produce with a new client until the returned stop is
// called (or the test ends).
func (r *groupRun) startProducer(t *testing.T, tb *testBroker) (stop func()) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	stopCh := make(chan struct{})
	produced := make(chan error, 1)
	go func() { produced <- r.produce(cl, stopCh) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		close(stopCh)
		if err := <-produced; err != nil {
			t.Errorf("producer: %v", err)
		}
		cl.Close()
	}
	t.Cleanup(stop)
	return stop
}

func (r *groupRun) numPartitions() int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.partitions
}

func (r *groupRun) record(name string, rec *kgo.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := tpo{rec.Partition, rec.Offset}
	if prev, ok := r.consumed[k]; ok && prev != string(rec.Value) {
		r.redelivered = append(r.redelivered, fmt.Sprintf("%d@%d read as %q and %q", k.p, k.o, prev, rec.Value))
	}
	r.consumed[k] = string(rec.Value)
	r.times[k]++
	r.total++
	if c, ok := r.committed[rec.Partition]; ok && rec.Offset < c {
		r.redelivered = append(r.redelivered, fmt.Sprintf("%s got %d@%d after offset %d was committed", name, k.p, k.o, c))
	}
	if !r.owned[name][rec.Partition] {
		r.unowned = append(r.unowned, fmt.Sprintf("%s got %d@%d", name, k.p, k.o))
	}
}

func (r *groupRun) commitDone(offsets map[string]map[int32]kgo.EpochOffset, resp *kmsg.OffsetCommitResponse, err error) {
	if err != nil || resp == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || t.Topic != r.topic {
				continue
			}
			if o := offsets[t.Topic][p.Partition].Offset; o > r.committed[p.Partition] {
				r.committed[p.Partition] = o
			}
		}
	}
}

func (r *groupRun) assigned(name string, cl *kgo.Client, ps []int32) {
	_, gen := cl.GroupMetadata()
	r.mu.Lock()
	defer r.mu.Unlock()
	own := r.owned[name]
	if own == nil {
		own = map[int32]bool{}
		r.owned[name] = own
	}
	for _, p := range ps {
		own[p] = true
	}
	snapshot := make([]int32, 0, len(own))
	for p := range own {
		snapshot = append(snapshot, p)
	}
	slices.Sort(snapshot)
	if r.generations[gen] == nil {
		r.generations[gen] = map[string][]int32{}
	}
	slot := name
	if prev, ok := r.successorOf[name]; ok {
		slot = prev
	}
	r.generations[gen][slot] = snapshot
}

func (r *groupRun) revoked(name string, ps []int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range ps {
		delete(r.owned[name], p)
	}
}

func (r *groupRun) consumedTotal() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// waitProgress waits until members consumed n more records, so that each
// phase of a scenario runs with records flowing.
func (r *groupRun) waitProgress(t *testing.T, n int) {
	t.Helper()
	want := r.consumedTotal() + n
	deadline := time.Now().Add(45 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for ; r.consumedTotal() < want; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("consumption stalled at %d records, waiting for %d", r.consumedTotal(), want)
		}
	}
}

// groupMember is one consumer of a scenario: a kgo group client whose poll
// loop records, commits and then allows rebalances.
type groupMember struct {
	name    string
	cl      *kgo.Client
	dialer  *cutDialer
	cancel  context.CancelFunc
	done    chan struct{}
	closed  bool
	crashed atomic.Bool
	// crashing asks the poll loop to crash right after recording a poll's
	// records, before committing them: they are the uncommitted tail
	// that other members must consume again.
	crashing atomic.Bool
	tail     []tpo
	// stall, when set, makes the poll loop hold its last poll (blocking
	// rebalances) after committing it, until release is closed; stalled
	// is closed once it holds.
	stall   atomic.Bool
	stalled chan struct{}
	release chan struct{}
}

// startMember starts a member; opts override the defaults (a 2s session
// timeout, manual commits after every poll).
func (r *groupRun) startMember(t *testing.T, tb *testBroker, name string, balancer kgo.GroupBalancer, opts ...kgo.Opt) *groupMember {
	t.Helper()
	m := &groupMember{name: name, dialer: &cutDialer{}, done: make(chan struct{}), stalled: make(chan struct{}), release: make(chan struct{})}
	lost := func(_ context.Context, _ *kgo.Client, a map[string][]int32) { r.revoked(name, a[r.topic]) }
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(tb.addr), kgo.ClientID(name), kgo.Dialer(m.dialer.dial),
		kgo.ConsumerGroup(r.group), kgo.ConsumeTopics(r.topic), kgo.Balancers(balancer),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(2 * time.Second), kgo.HeartbeatInterval(200 * time.Millisecond),
		kgo.RebalanceTimeout(20 * time.Second), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, a map[string][]int32) { r.assigned(name, cl, a[r.topic]) }),
		kgo.OnPartitionsRevoked(lost),
		kgo.OnPartitionsLost(lost),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go r.consume(ctx, m)
	t.Cleanup(m.close)
	return m
}

func (r *groupRun) consume(ctx context.Context, m *groupMember) {
	defer close(m.done)
	for ctx.Err() == nil {
		fs := m.cl.PollRecords(ctx, 500)
		fs.EachRecord(func(rec *kgo.Record) {
			r.record(m.name, rec)
			m.tail = append(m.tail, tpo{rec.Partition, rec.Offset})
		})
		if m.crashing.Load() && len(m.tail) > 0 {
			m.crashed.Store(true)
			m.dialer.cutAll()
			return
		}
		m.tail = m.tail[:0]
		if offsets := m.cl.UncommittedOffsets(); len(offsets) > 0 {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			m.cl.CommitOffsetsSync(cctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				r.commitDone(offsets, resp, err)
			})
			cancel()
		}
		if m.stall.Load() && fs.NumRecords() > 0 {
			m.stall.Store(false)
			close(m.stalled)
			select {
			case <-m.release:
			case <-ctx.Done():
			}
		}
		m.cl.AllowRebalance()
	}
}

// leave stops the poll loop and closes the client, which leaves the group.
func (m *groupMember) leave() {
	m.cancel()
	<-m.done
	m.cl.CloseAllowingRebalance()
	m.closed = true
}

// crash makes the member vanish without a word, holding records it
// consumed but did not commit: its connections drop and it cannot reach
// the broker again, so only its session timeout removes it. It returns
// the uncommitted records.
func (m *groupMember) crash() []tpo {
	m.crashing.Store(true)
	<-m.done
	return m.tail
}

func (m *groupMember) close() {
	if m.closed {
		return
	}
	m.cancel()
	<-m.done
	if m.crashed.Load() {
		// A crashed member cannot leave; do not let Close retry it.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		m.cl.LeaveGroupContext(ctx)
	}
	m.cl.CloseAllowingRebalance()
	m.closed = true
}

func (m *groupMember) memberID() string {
	id, _ := m.cl.GroupMetadata()
	return id
}

// settled accepts a Stable group made of exactly ms whose assignment
// covers every partition.
func (r *groupRun) settled(ms ...*groupMember) func(kadm.DescribedGroup) bool {
	return func(g kadm.DescribedGroup) bool {
		ids := make([]string, len(ms))
		for i, m := range ms {
			ids[i] = m.memberID()
		}
		if !stableWith(ids...)(g) {
			return false
		}
		n := 0
		for _, m := range g.Members {
			if c, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range c.Topics {
					n += len(t.Partitions)
				}
			}
		}
		return n == int(r.numPartitions())
	}
}

// checkDescribed asserts that a described group gives no partition to two
// members.
func (r *groupRun) checkDescribed(t *testing.T, g kadm.DescribedGroup) {
	t.Helper()
	owner := map[int32]string{}
	for _, m := range g.Members {
		c, ok := m.Assigned.AsConsumer()
		if !ok {
			t.Fatalf("member %s: assignment is not a consumer assignment", m.MemberID)
		}
		for _, at := range c.Topics {
			for _, p := range at.Partitions {
				if prev, dup := owner[p]; dup {
					t.Fatalf("DescribeGroups: partition %d assigned to %s and %s", p, prev, m.MemberID)
				}
				owner[p] = m.MemberID
			}
		}
	}
}

// finish waits until every produced record is consumed and the group's
// committed offsets reach the log end offsets.
func (r *groupRun) finish(t *testing.T, adm *kadm.Client) {
	t.Helper()
	ctx := testContext(t)
	ends, err := adm.ListEndOffsets(ctx, r.topic)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(45 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		fetched, err := adm.FetchOffsets(ctx, r.group)
		if err == nil {
			behind := 0
			ends.Each(func(e kadm.ListedOffset) {
				o, ok := fetched.Lookup(r.topic, e.Partition)
				if !ok || o.Err != nil || o.At != e.Offset {
					behind++
				}
			})
			if behind == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offsets never reached the end offsets: %v (err %v)", fetched, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	total := int64(0)
	ends.Each(func(e kadm.ListedOffset) { total += e.Offset })
	if int64(len(r.produced)) != total {
		t.Fatalf("producer saw %d records acknowledged, the log ends hold %d", len(r.produced), total)
	}
	for k, v := range r.produced {
		got, ok := r.consumed[k]
		if !ok {
			t.Fatalf("record %d@%d (%q) was never consumed", k.p, k.o, v)
		}
		if got != v {
			t.Fatalf("record %d@%d consumed as %q, produced as %q", k.p, k.o, got, v)
		}
	}
	if len(r.redelivered) > 0 {
		t.Fatalf("%d records delivered again after their commit, e.g. %s", len(r.redelivered), r.redelivered[0])
	}
	if len(r.unowned) > 0 {
		t.Fatalf("%d records consumed from partitions not owned, e.g. %s", len(r.unowned), r.unowned[0])
	}
	for gen, members := range r.generations {
		owner := map[int32]string{}
		for id, ps := range members {
			for _, p := range ps {
				if prev, dup := owner[p]; dup {
					t.Fatalf("generation %d: partition %d owned by %s and %s", gen, p, prev, id)
				}
				owner[p] = id
			}
		}
	}
	t.Logf("%d records produced, %d consumed (%d repeats), %d generations", len(r.produced), r.total, r.total-len(r.consumed), len(r.generations))
}

func TestGroupMembershipChurn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := startBroker(t, map[string]string{"group.min.session.timeout.ms": "1000"})
			r := newGroupRun("churn", "churn-"+tc.name, 12)
			tb.createTopic(r.topic, r.partitions, nil)
			adm := tb.admin()

			stop := r.startProducer(t, tb)

			phase := func(what string, ms ...*groupMember) {
				t.Helper()
				r.checkDescribed(t, waitGroup(t, adm, r.group, what, r.settled(ms...)))
				r.waitProgress(t, 200)
			}
			m1 := r.startMember(t, tb, "m1", tc.balancer)
			m2 := r.startMember(t, tb, "m2", tc.balancer)
			m3 := r.startMember(t, tb, "m3", tc.balancer)
			phase("settled with m1, m2, m3", m1, m2, m3)

			m3.leave()
			phase("settled after m3 left", m1, m2)

			m4 := r.startMember(t, tb, "m4", tc.balancer)
			phase("settled after m4 joined", m1, m2, m4)

			tail := m1.crash()
			phase("settled after m1 crashed", m2, m4)

			m5 := r.startMember(t, tb, "m5", tc.balancer)
			phase("settled after m5 joined", m2, m4, m5)

			stop()
			r.finish(t, adm)
			r.mu.Lock()
			defer r.mu.Unlock()
			for _, k := range tail {
				if r.times[k] < 2 {
					t.Fatalf("record %d@%d, consumed but not committed by the crashed member, was not consumed again", k.p, k.o)
				}
			}
			t.Logf("crashed member's uncommitted tail: %d records, all consumed again", len(tail))
		})
	}
}
