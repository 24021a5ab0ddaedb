package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives a shard the way the Coordinator does, but with a manual
// clock, predictable member ids and writes completed only when told.
type harness struct {
	t       *testing.T
	s       *shard
	now     time.Time
	writes  []write
	written [][]record
	// logEnd is the offset the next completed write is appended at, so
	// that writes keep their log order across completeWrites calls.
	logEnd int64
}

func testLimits() limits {
	return limits{
		minSessionTimeout:     time.Second,
		maxSessionTimeout:     5 * time.Minute,
		initialRebalanceDelay: 0,
		maxGroupSize:          10,
		offsetsRetention:      time.Hour,
		maxMetadataSize:       16,
	}
}

func newHarness(t *testing.T, l limits) *harness {
	t.Helper()
	h := &harness{t: t, s: newShard(0, l), now: time.Unix(1_700_000_000, 0)}
	n := 0
	h.s.newMemberID = func(prefix string) string {
		n++
		return fmt.Sprintf("%s-%d", prefix, n)
	}
	return h
}

func (h *harness) run(fn func(eff *effects)) {
	var eff effects
	fn(&eff)
	h.writes = append(h.writes, eff.writes...)
	eff.deliver()
}

// completeWrites finishes every queued write, including writes queued by
// completions, with err (nil: success at increasing offsets).
func (h *harness) completeWrites(err error) {
	for len(h.writes) > 0 {
		offset := h.logEnd
		w := h.writes[0]
		h.writes = h.writes[1:]
		h.written = append(h.written, w.records)
		h.run(func(eff *effects) {
			if w.done != nil {
				w.done(h.s, err, offset, h.now, eff)
			}
		})
		if w.notify != nil {
			w.notify <- err
		}
		h.logEnd += int64(len(w.records))
	}
}

func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.run(func(eff *effects) { h.s.tickAll(h.now, eff) })
}

type joinOpt func(*joinArgs)

func withMember(id string) joinOpt   { return func(a *joinArgs) { a.memberID = id } }
func withInstance(id string) joinOpt { return func(a *joinArgs) { a.instanceID = id } }
func withKIP394() joinOpt            { return func(a *joinArgs) { a.requireKnownMemberID = true } }
func withSession(d time.Duration) joinOpt {
	return func(a *joinArgs) { a.sessionTimeout = d }
}
func withRebalance(d time.Duration) joinOpt { return func(a *joinArgs) { a.rebalanceTimeout = d } }
func withProtocolType(pt string) joinOpt    { return func(a *joinArgs) { a.protocolType = pt } }
func withProtocols(ps ...protocol) joinOpt  { return func(a *joinArgs) { a.protocols = ps } }

func rangeProtocol(meta string) protocol { return protocol{name: "range", metadata: []byte(meta)} }

// join sends a JoinGroup for group "g" from client "c" and returns the
// channel its answer arrives on.
func (h *harness) join(opts ...joinOpt) chan joinResult {
	a := joinArgs{
		groupID:          "g",
		clientID:         "c",
		clientHost:       "/127.0.0.1",
		rebalanceTimeout: 30 * time.Second,
		sessionTimeout:   10 * time.Second,
		protocolType:     "consumer",
		protocols:        []protocol{rangeProtocol("m")},
	}
	ch := make(chan joinResult, 1)
	a.waiter = ch
	for _, o := range opts {
		o(&a)
	}
	h.run(func(eff *effects) { h.s.join(a, h.now, eff) })
	return ch
}

func (h *harness) sync(memberID string, gen int32, assign map[string][]byte) chan syncResult {
	ch := make(chan syncResult, 1)
	a := syncArgs{groupID: "g", generation: gen, memberID: memberID, assignments: assign, waiter: ch}
	h.run(func(eff *effects) { h.s.sync(a, h.now, eff) })
	return ch
}

func (h *harness) heartbeat(memberID string, gen int32) int16 {
	return h.s.heartbeat("g", memberID, "", gen, h.now)
}

func (h *harness) group() *group { return h.s.groups["g"] }

func mustJoin(t *testing.T, ch chan joinResult) joinResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	default:
		t.Fatal("join not answered")
		return joinResult{}
	}
}

func noJoin(t *testing.T, ch chan joinResult) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("join answered early: %+v", r)
	default:
	}
}

func mustSync(t *testing.T, ch chan syncResult) syncResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	default:
		t.Fatal("sync not answered")
		return syncResult{}
	}
}

func noSync(t *testing.T, ch chan syncResult) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("sync answered early: %+v", r)
	default:
	}
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	wc := int16(0)
	if want != nil {
		wc = want.Code
	}
	if got != wc {
		t.Fatalf("%s: error code %d (%v), want %d (%v)", what, got, kerr.ErrorForCode(got), wc, want)
	}
}

func wantState(t *testing.T, g *group, s State) {
	t.Helper()
	if g == nil {
		t.Fatalf("group missing, want state %v", s)
	}
	if g.state != s {
		t.Fatalf("group state %v, want %v", g.state, s)
	}
}

// stableOne brings a one-member group to Stable and returns the member id.
func (h *harness) stableOne(opts ...joinOpt) string {
	h.t.Helper()
	r := mustJoin(h.t, h.join(opts...))
	wantCode(h.t, "join", r.err, nil)
	s := h.sync(r.memberID, r.generation, map[string][]byte{r.memberID: []byte("a")})
	h.completeWrites(nil)
	wantCode(h.t, "sync", mustSync(h.t, s).err, nil)
	wantState(h.t, h.group(), StateStable)
	return r.memberID
}

func consumerMeta(topics ...string) []byte {
	m := kmsg.NewConsumerMemberMetadata()
	m.Topics = topics
	return m.AppendTo(nil)
}
