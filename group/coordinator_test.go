package group

import (
	"context"
	"fmt"
	"github.com/brook-mq/brook/internal/testutil"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

// memPartition is an in-memory __consumer_offsets partition: appends are
// committed at once unless the test holds them.
type memPartition struct {
	mu      sync.Mutex
	batches [][]byte
	next    int64
	failErr error
	// readGate, when set, blocks Read until closed (a slow load).
	readGate chan struct{}
	// stall, when set, keeps appended batches from being committed until
	// it is closed, as a paused follower still in the ISR does.
	stall chan struct{}
	// hwLag is how far the high watermark trails the log end, as on a
	// new leader whose followers have not fetched since its election.
	// Set it with setHWLag once a coordinator may wait for the HW.
	hwLag int64
	// hwMoved is closed and replaced whenever the high watermark moves.
	hwMoved chan struct{}
}

// movedLocked wakes the waits for the high watermark.
func (p *memPartition) movedLocked() {
	if p.hwMoved != nil {
		close(p.hwMoved)
		p.hwMoved = nil
	}
}

// setHWLag moves the high watermark to lag records below the log end.
func (p *memPartition) setHWLag(lag int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hwLag = lag
	p.movedLocked()
}

func (p *memPartition) WaitForHighWatermark(ctx context.Context, offset int64) error {
	for {
		p.mu.Lock()
		if p.next-p.hwLag >= offset {
			p.mu.Unlock()
			return nil
		}
		if p.hwMoved == nil {
			p.hwMoved = make(chan struct{})
		}
		moved := p.hwMoved
		p.mu.Unlock()
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *memPartition) Append(ctx context.Context, b []byte) (int64, error) {
	h, err := batch.ParseHeader(b)
	if err != nil {
		return 0, err
	}
	if err := batch.CheckCRC(b, &h); err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failErr != nil {
		return 0, p.failErr
	}
	b = append([]byte(nil), b...)
	base := p.next
	batch.SetBaseOffset(b, base)
	p.batches = append(p.batches, b)
	p.next += int64(h.LastOffsetDelta) + 1
	p.movedLocked()
	if stall := p.stall; stall != nil {
		p.mu.Unlock()
		defer p.mu.Lock()
		select {
		case <-stall:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return base, nil
}

func (p *memPartition) Read(offset int64, maxBytes int32) ([]byte, error) {
	if p.readGate != nil {
		<-p.readGate
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, b := range p.batches {
		h, _ := batch.ParseHeader(b)
		if h.LastOffset() < offset {
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

func (p *memPartition) HighWatermark() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next - p.hwLag
}

func (p *memPartition) LogEndOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}

type env struct {
	t     *testing.T
	clock *testutil.Clock
	c     *Coordinator
	p     *memPartition
	ctx   context.Context
	// commitTimeout is the coordinator's CommitTimeout (0: the default).
	commitTimeout time.Duration
}

// newEnv starts a coordinator with a single offsets partition, so every
// group maps to partition 0.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, clock: testutil.NewClock(time.Unix(1_700_000_000, 0)), p: &memPartition{}}
	e.ctx = WithClientInfo(context.Background(), "client", "/127.0.0.1")
	e.start()
	return e
}

func (e *env) start() {
	e.t.Helper()
	e.startLoading()
	e.waitLoaded()
}

// startLoading starts the coordinator without waiting for its load.
func (e *env) startLoading() {
	e.t.Helper()
	e.c = New(Config{
		NumPartitions:     1,
		MinSessionTimeout: time.Second,
		MaxSessionTimeout: time.Hour,
		OffsetsRetention:  time.Hour,
		// One batch per read, so that the load loop's bound is what
		// decides where it stops.
		LoadBufferSize: 1,
		CommitTimeout:  e.commitTimeout,
		Now:            e.clock.Now,
		NewTimer:       e.clock.Timer,
	})
	e.t.Cleanup(e.c.Close)
	e.c.OnElected(0, 1, e.p)
}

// restart simulates a broker restart: a new coordinator loads the same log.
func (e *env) restart() {
	e.t.Helper()
	e.c.Close()
	e.start()
}

func (e *env) waitLoaded() {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := e.c.Heartbeat(e.ctx, &kmsg.HeartbeatRequest{Version: 4, Group: "probe"})
		if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && e.loaded() {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatal("partition did not load")
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *env) loaded() bool {
	e.c.mu.Lock()
	ps := e.c.parts[0]
	e.c.mu.Unlock()
	if ps == nil {
		return false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return !ps.loading
}

func (e *env) join(version int16, group, member string, instance *string) *kmsg.JoinGroupResponse {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = version
	req.Group = group
	req.MemberID = member
	req.InstanceID = instance
	req.SessionTimeoutMillis = 10_000
	req.RebalanceTimeoutMillis = 30_000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", consumerMeta("t")
	req.Protocols = append(req.Protocols, p)
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	return e.c.JoinGroup(ctx, req)
}

func (e *env) sync(version int16, group, member string, gen int32, instance *string, assign map[string]string) *kmsg.SyncGroupResponse {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = version
	req.Group, req.MemberID, req.Generation, req.InstanceID = group, member, gen, instance
	for m, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = m, []byte(a)
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	return e.c.SyncGroup(ctx, req)
}

// stable joins one member with JoinGroup v5 and syncs it.
func (e *env) stable(group string, instance *string) (string, int32) {
	e.t.Helper()
	r := e.join(5, group, "", instance)
	if r.ErrorCode == kerr.MemberIDRequired.Code {
		r = e.join(5, group, r.MemberID, instance)
	}
	if r.ErrorCode != 0 {
		e.t.Fatalf("join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	s := e.sync(5, group, r.MemberID, r.Generation, instance, map[string]string{r.MemberID: "assignment"})
	if s.ErrorCode != 0 || string(s.MemberAssignment) != "assignment" {
		e.t.Fatalf("sync: %v %q", kerr.ErrorForCode(s.ErrorCode), s.MemberAssignment)
	}
	return r.MemberID, r.Generation
}

func (e *env) commit(version int16, group, member string, gen int32, topic string, part int32, offset int64, meta string) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	req.Group, req.MemberID, req.Generation = group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.Metadata = part, offset, &meta
	p.LeaderEpoch = 3
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp := e.c.OffsetCommit(e.ctx, req)
	return resp.Topics[0].Partitions[0].ErrorCode
}

func (e *env) fetch(group string) (int16, []kmsg.OffsetFetchResponseGroupTopic) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	req.Groups = append(req.Groups, g)
	resp := e.c.OffsetFetch(e.ctx, req)
	return resp.Groups[0].ErrorCode, resp.Groups[0].Topics
}

func TestCommitFetchRoundTrip(t *testing.T) {
	e := newEnv(t)
	wantCode(t, "commit", e.commit(8, "simple", "", -1, "t", 3, 100, "hello"), nil)

	code, topics := e.fetch("simple")
	wantCode(t, "fetch", code, nil)
	if len(topics) != 1 || len(topics[0].Partitions) != 1 {
		t.Fatalf("fetch all: %+v", topics)
	}
	p := topics[0].Partitions[0]
	if topics[0].Topic != "t" || p.Partition != 3 || p.Offset != 100 || deref(p.Metadata) != "hello" || p.LeaderEpoch != 3 {
		t.Fatalf("fetched %+v", p)
	}

	// Old versions: v1 single group with explicit partitions, including one
	// never committed.
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 1
	req.Group = "simple"
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{3, 4}
	req.Topics = append(req.Topics, rt)
	resp := e.c.OffsetFetch(e.ctx, req)
	got := resp.Topics[0].Partitions
	if len(got) != 2 || got[0].Offset != 100 || got[1].Offset != -1 || deref(got[1].Metadata) != "" {
		t.Fatalf("v1 fetch %+v", got)
	}
	// The responses must encode at their versions.
	_ = resp.AppendTo(nil)
}

func TestReloadRestoresOffsetsAndGroups(t *testing.T) {
	e := newEnv(t)
	inst := "instance-1"
	member, gen := e.stable("g1", &inst)
	wantCode(t, "member commit", e.commit(8, "g1", member, gen, "t", 0, 7, "m1"), nil)
	wantCode(t, "simple commit", e.commit(8, "g2", "", -1, "u", 1, 9, ""), nil)
	wantCode(t, "simple commit overwritten", e.commit(8, "g2", "", -1, "u", 1, 10, "x"), nil)

	e.restart()

	_, topics := e.fetch("g1")
	if len(topics) != 1 || topics[0].Partitions[0].Offset != 7 || deref(topics[0].Partitions[0].Metadata) != "m1" {
		t.Fatalf("g1 offsets after reload: %+v", topics)
	}
	_, topics = e.fetch("g2")
	if len(topics) != 1 || topics[0].Partitions[0].Offset != 10 || deref(topics[0].Partitions[0].Metadata) != "x" {
		t.Fatalf("g2 offsets after reload: %+v", topics)
	}
	d := e.c.DescribeGroups(e.ctx, &kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g1"}})
	g := d.Groups[0]
	if g.State != "Stable" || g.Protocol != "range" || len(g.Members) != 1 || g.Members[0].MemberID != member ||
		deref(g.Members[0].InstanceID) != inst || string(g.Members[0].MemberAssignment) != "assignment" {
		t.Fatalf("g1 after reload: %+v", g)
	}
	hb := e.c.Heartbeat(e.ctx, &kmsg.HeartbeatRequest{Version: 3, Group: "g1", MemberID: member, Generation: gen, InstanceID: &inst})
	wantCode(t, "heartbeat after reload", hb.ErrorCode, nil)
}

func TestDeleteGroupSurvivesReload(t *testing.T) {
	e := newEnv(t)
	wantCode(t, "commit", e.commit(8, "gone", "", -1, "t", 0, 1, ""), nil)
	resp := e.c.DeleteGroups(e.ctx, &kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"gone", "never"}})
	wantCode(t, "delete", resp.Groups[0].ErrorCode, nil)
	wantCode(t, "delete unknown", resp.Groups[1].ErrorCode, kerr.GroupIDNotFound)
	e.restart()
	if _, topics := e.fetch("gone"); len(topics) != 0 {
		t.Fatalf("deleted group's offsets came back: %+v", topics)
	}
	l := e.c.ListGroups(e.ctx, &kmsg.ListGroupsRequest{Version: 4})
	if len(l.Groups) != 0 {
		t.Fatalf("groups after delete and reload: %+v", l.Groups)
	}
}

func TestResignAnswersNotCoordinator(t *testing.T) {
	e := newEnv(t)
	member, gen := e.stable("g", nil)

	// A second member's join waits in the rebalance when the partition moves.
	done := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { done <- e.join(3, "g", "", nil) }()
	waitFor(t, func() bool { return groupState(e, "g") == "PreparingRebalance" })

	e.c.OnResigned(0, 1)
	select {
	case r := <-done:
		wantCode(t, "waiting join", r.ErrorCode, kerr.NotCoordinator)
	case <-time.After(10 * time.Second):
		t.Fatal("waiting join not answered on resignation")
	}
	hb := e.c.Heartbeat(e.ctx, &kmsg.HeartbeatRequest{Version: 4, Group: "g", MemberID: member, Generation: gen})
	wantCode(t, "heartbeat", hb.ErrorCode, kerr.NotCoordinator)
	wantCode(t, "commit", e.commit(8, "g", member, gen, "t", 0, 1, ""), kerr.NotCoordinator)
	code, _ := e.fetch("g")
	wantCode(t, "fetch", code, kerr.NotCoordinator)
}

func TestStaleResignationIgnored(t *testing.T) {
	e := newEnv(t)
	e.c.OnElected(0, 5, e.p)
	e.waitLoaded()
	e.c.OnResigned(0, 4)
	wantCode(t, "commit", e.commit(8, "g", "", -1, "t", 0, 1, ""), nil)
}

func TestLoadInProgress(t *testing.T) {
	e := newEnv(t)
	wantCode(t, "commit", e.commit(8, "g", "", -1, "t", 0, 1, ""), nil)
	e.c.Close()

	gate := make(chan struct{})
	e.p.readGate = gate
	e.c = New(Config{NumPartitions: 1, Now: e.clock.Now})
	t.Cleanup(e.c.Close)
	e.c.OnElected(0, 2, e.p)

	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.SessionTimeoutMillis, join.ProtocolType = 4, "g", 10_000, "consumer"
	wantCode(t, "join", e.c.JoinGroup(e.ctx, join).ErrorCode, kerr.CoordinatorLoadInProgress)
	wantCode(t, "commit", e.commit(8, "g", "", -1, "t", 0, 1, ""), kerr.CoordinatorLoadInProgress)
	code, _ := e.fetch("g")
	wantCode(t, "fetch", code, kerr.CoordinatorLoadInProgress)
	// Heartbeats pass blindly, SyncGroup asks for a rejoin.
	wantCode(t, "heartbeat", e.c.Heartbeat(e.ctx, &kmsg.HeartbeatRequest{Version: 4, Group: "g", MemberID: "m"}).ErrorCode, nil)
	wantCode(t, "sync", e.sync(4, "g", "m", 1, nil, nil).ErrorCode, kerr.RebalanceInProgress)
	wantCode(t, "list", e.c.ListGroups(e.ctx, &kmsg.ListGroupsRequest{Version: 4}).ErrorCode, kerr.CoordinatorLoadInProgress)

	close(gate)
	e.waitLoaded()
	_, topics := e.fetch("g")
	if len(topics) != 1 || topics[0].Partitions[0].Offset != 1 {
		t.Fatalf("after load: %+v", topics)
	}
}

func TestNotCoordinatorForOtherPartitions(t *testing.T) {
	c := New(Config{NumPartitions: 50})
	defer c.Close()
	c.OnElected(c.PartitionFor("mine"), 0, &memPartition{})
	other := "x"
	for i := 0; c.PartitionFor(other) == c.PartitionFor("mine"); i++ {
		other = fmt.Sprintf("x%d", i)
	}
	resp := c.Heartbeat(context.Background(), &kmsg.HeartbeatRequest{Version: 4, Group: other, MemberID: "m"})
	wantCode(t, "heartbeat", resp.ErrorCode, kerr.NotCoordinator)
}

func TestStaticRejoinThroughAPI(t *testing.T) {
	e := newEnv(t)
	inst := "static-1"
	old, gen := e.stable("g", &inst)
	r := e.join(5, "g", "", &inst)
	wantCode(t, "rejoin", r.ErrorCode, nil)
	if r.MemberID == old || r.Generation != gen || r.LeaderID != old {
		t.Fatalf("rejoin %+v", r)
	}
	if groupState(e, "g") != "Stable" {
		t.Fatalf("state %s after static rejoin", groupState(e, "g"))
	}
	hb := e.c.Heartbeat(e.ctx, &kmsg.HeartbeatRequest{Version: 3, Group: "g", MemberID: old, Generation: gen, InstanceID: &inst})
	wantCode(t, "old member id", hb.ErrorCode, kerr.FencedInstanceID)

	// The replacement is durable: a reloaded coordinator knows the new id.
	e.restart()
	hb = e.c.Heartbeat(e.ctx, &kmsg.HeartbeatRequest{Version: 3, Group: "g", MemberID: r.MemberID, Generation: gen, InstanceID: &inst})
	wantCode(t, "new member id after reload", hb.ErrorCode, nil)
}

func TestSessionExpiryThroughTick(t *testing.T) {
	e := newEnv(t)
	member, gen := e.stable("g", nil)
	e.clock.Advance(11 * time.Second)
	e.c.tick(false)
	hb := e.c.Heartbeat(e.ctx, &kmsg.HeartbeatRequest{Version: 4, Group: "g", MemberID: member, Generation: gen})
	wantCode(t, "heartbeat after expiry", hb.ErrorCode, kerr.UnknownMemberID)
	if s := groupState(e, "g"); s != "Empty" {
		t.Fatalf("state %s", s)
	}
}

func TestOffsetExpiryThroughTick(t *testing.T) {
	e := newEnv(t)
	wantCode(t, "commit", e.commit(8, "g", "", -1, "t", 0, 1, ""), nil)
	e.clock.Advance(59 * time.Minute)
	e.c.tick(true)
	if _, topics := e.fetch("g"); len(topics) != 1 {
		t.Fatal("expired before offsets.retention")
	}
	e.clock.Advance(time.Minute)
	e.c.tick(true)
	waitFor(t, func() bool { _, topics := e.fetch("g"); return len(topics) == 0 })
	waitFor(t, func() bool { return e.p.HighWatermark() == 3 }) // commit, offset tombstone, group tombstone
	e.restart()
	if _, topics := e.fetch("g"); len(topics) != 0 {
		t.Fatalf("expired offsets back after reload: %+v", topics)
	}
}

func TestConcurrentGroupsRace(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			g := fmt.Sprintf("g%d", i)
			m, gen := e.stable(g, nil)
			for j := 0; j < 20; j++ {
				if code := e.commit(8, g, m, gen, "t", int32(j%3), int64(j), ""); code != 0 {
					t.Errorf("commit %s: %v", g, kerr.ErrorForCode(code))
					return
				}
			}
		}(i)
	}
	wg.Wait()
	e.restart()
	for i := 0; i < 8; i++ {
		_, topics := e.fetch(fmt.Sprintf("g%d", i))
		if len(topics) != 1 || len(topics[0].Partitions) != 3 || topics[0].Partitions[2].Offset != 17 {
			t.Fatalf("g%d after reload: %+v", i, topics)
		}
	}
}

func groupState(e *env, id string) string {
	return e.c.DescribeGroups(e.ctx, &kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{id}}).Groups[0].State
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestTopicDeletionRemovesOffsets(t *testing.T) {
	e := newEnv(t)
	member, gen := e.stable("g", nil)
	wantCode(t, "commit t", e.commit(8, "g", member, gen, "t", 0, 1, ""), nil)
	wantCode(t, "commit u", e.commit(8, "g", member, gen, "u", 0, 2, ""), nil)
	wantCode(t, "simple commit", e.commit(8, "s", "", -1, "t", 0, 3, ""), nil)
	hw := e.p.HighWatermark()
	e.c.OnTopicsDeleted("t")
	if _, topics := e.fetch("g"); len(topics) != 1 || topics[0].Topic != "u" {
		t.Fatalf("g after deletion: %+v", topics)
	}
	// Two offset tombstones and the emptied simple group's tombstone.
	waitFor(t, func() bool { return e.p.HighWatermark() == hw+3 })
	e.restart()
	if _, topics := e.fetch("g"); len(topics) != 1 || topics[0].Topic != "u" {
		t.Fatalf("g after reload: %+v", topics)
	}
	if _, topics := e.fetch("s"); len(topics) != 0 {
		t.Fatalf("s after reload: %+v", topics)
	}
	if s := groupState(e, "s"); s != "Dead" {
		t.Fatalf("simple group left with no offsets is %s, want removed", s)
	}
}

// TestReelectionKeepsRebalance: the controller names this broker leader
// again when a follower dies (ISR shrink, epoch bump) or a new controller
// resends its decisions (same epoch). Neither is new leadership: a JoinGroup
// waiting in a rebalance stays, and the partition is not replayed.
func TestReelectionKeepsRebalance(t *testing.T) {
	e := newEnv(t)
	member, gen := e.stable("g", nil)

	done := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { done <- e.join(3, "g", "", nil) }()
	waitFor(t, func() bool { return groupState(e, "g") == "PreparingRebalance" })

	e.c.OnElected(0, 2, e.p) // a follower died: epoch bump
	e.c.OnElected(0, 2, e.p) // a new controller resends
	wantState := func() {
		t.Helper()
		if s := groupState(e, "g"); s != "PreparingRebalance" {
			t.Fatalf("group state %q after re-election, want PreparingRebalance", s)
		}
	}
	wantState()
	select {
	case r := <-done:
		t.Fatalf("waiting join answered on re-election: %v", kerr.ErrorForCode(r.ErrorCode))
	default:
	}

	// The old member rejoins and the rebalance completes for both.
	r := e.join(3, "g", member, nil)
	wantCode(t, "rejoin", r.ErrorCode, nil)
	if r.Generation != gen+1 {
		t.Fatalf("generation %d, want %d", r.Generation, gen+1)
	}
	select {
	case r := <-done:
		wantCode(t, "waiting join", r.ErrorCode, nil)
	case <-time.After(10 * time.Second):
		t.Fatal("waiting join not answered")
	}
	// A resignation for the epoch before the bump is stale.
	e.c.OnResigned(0, 1)
	if s := groupState(e, "g"); s != "CompletingRebalance" {
		t.Fatalf("group state %q after stale resignation, want CompletingRebalance", s)
	}
}

// within runs fn and fails the test if it does not return in 10s (a
// generous bound: the point is that it returns at all).
func within[T any](t *testing.T, what string, fn func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- fn() }()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer", what)
		var zero T
		return zero
	}
}

// TestCommitTimeout: while appends are not committed (a paused follower
// still in the ISR), a commit waits offsets.commit.timeout.ms and gets
// REQUEST_TIMED_OUT, and the group metadata of a SyncGroup gets
// REBALANCE_IN_PROGRESS, as Kafka's storeOffsets and storeGroup answer.
func TestCommitTimeout(t *testing.T) {
	e := newEnv(t)
	e.commitTimeout = 100 * time.Millisecond
	e.restart()
	member, gen := e.stable("g", nil)

	stall := make(chan struct{})
	e.p.mu.Lock()
	e.p.stall = stall
	e.p.mu.Unlock()
	code := within(t, "stalled commit", func() int16 { return e.commit(8, "g", member, gen, "t", 0, 5, "") })
	wantCode(t, "stalled commit", code, kerr.RequestTimedOut)
	if _, topics := e.fetch("g"); len(topics) != 0 {
		t.Fatalf("timed-out commit visible: %+v", topics)
	}

	r := within(t, "rejoin", func() *kmsg.JoinGroupResponse { return e.join(5, "g", member, nil) })
	wantCode(t, "rejoin", r.ErrorCode, nil)
	s := within(t, "stalled sync", func() *kmsg.SyncGroupResponse {
		return e.sync(5, "g", member, r.Generation, nil, map[string]string{member: "a"})
	})
	wantCode(t, "stalled sync", s.ErrorCode, kerr.RebalanceInProgress)

	// Once appends commit again, so do commits.
	e.p.mu.Lock()
	e.p.stall = nil
	e.p.mu.Unlock()
	close(stall)
	code = within(t, "commit", func() int16 { return e.commit(8, "simple", "", -1, "t", 0, 6, "") })
	wantCode(t, "commit", code, nil)
}
