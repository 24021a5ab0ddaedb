package broker

import (
	"math"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// sessionHarness drives the pure session cache the way the Fetch handler
// does, with ids 1, 2, 3... and each partition's read given by state.
type sessionHarness struct {
	t     *testing.T
	cache *fetchSessionCache
	// state is what a read of each partition returns.
	state map[fetchSessionKey]fetchSessionResult
}

func newSessionHarness(t *testing.T, slots int) *sessionHarness {
	next := int32(0)
	return &sessionHarness{t: t, state: map[fetchSessionKey]fetchSessionResult{},
		cache: newFetchSessionCache(slots, func() int32 { next++; return next })}
}

func tp(topic string, p int32) fetchSessionKey { return fetchSessionKey{topic: topic, partition: p} }

// sessionFetchOutcome is what one fetch came to.
type sessionFetchOutcome struct {
	kind      fetchContextKind
	errorCode int16
	sessionID int32
	fetched   []fetchSessionKey // read, in order
	sent      []fetchSessionKey // in the response
}

// fetch serves one request: open, read every partition from h.state,
// finish. Records are read once: a partition's records are consumed.
func (h *sessionHarness) fetch(nowMs int64, version int16, follower bool, id, epoch int32, req []fetchSessionKey, forgotten []fetchSessionKey) sessionFetchOutcome {
	parts := make([]fetchSessionPartition, len(req))
	for i, k := range req {
		parts[i] = fetchSessionPartition{key: k, params: fetchSessionParams{fetchOffset: int64(i)}}
	}
	ctx := h.cache.newContext(nowMs, id, epoch, version, parts, forgotten)
	out := sessionFetchOutcome{kind: ctx.kind, errorCode: ctx.errorCode}
	switch ctx.kind {
	case fetchSessionError:
		return out
	case fetchIncremental:
		parts = ctx.session.partitions(nil)
	}
	results := make([]fetchSessionResult, len(parts))
	for i, p := range parts {
		out.fetched = append(out.fetched, p.key)
		results[i] = h.state[p.key]
		st := h.state[p.key]
		st.recordsBytes = 0
		h.state[p.key] = st
	}
	switch ctx.kind {
	case fetchFull:
		out.sessionID = h.cache.createSession(nowMs, follower, version, parts, results, quietContext{})
		out.sent = out.fetched
	case fetchIncremental:
		out.sessionID = ctx.session.id
		if out.errorCode = ctx.session.respond(ctx.reqEpoch, parts, results, quietContext{}); out.errorCode != 0 {
			return out
		}
		for i, r := range results {
			if r.send {
				out.sent = append(out.sent, parts[i].key)
			}
		}
	default:
		out.sent = out.fetched
	}
	return out
}

func (h *sessionHarness) checkPartitionCount() {
	n := 0
	for _, s := range h.cache.sessions {
		n += s.size()
	}
	if n != h.cache.partitions {
		h.t.Errorf("cache counts %d partitions, sessions hold %d", h.cache.partitions, n)
	}
}

func TestNextFetchSessionEpoch(t *testing.T) {
	for _, tc := range []struct{ in, want int32 }{{0, 1}, {1, 2}, {-1, -1}, {-7, -1}, {math.MaxInt32, 1}} {
		if got := nextFetchSessionEpoch(tc.in); got != tc.want {
			t.Errorf("nextFetchSessionEpoch(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestFetchSessionScript steps one cache through Kafka's session rules;
// each step is a request, what the partitions read, and what must follow.
func TestFetchSessionScript(t *testing.T) {
	a0, a1, a2, b0 := tp("a", 0), tp("a", 1), tp("a", 2), tp("b", 0)
	type step struct {
		name      string
		version   int16
		id, epoch int32
		req, forg []fetchSessionKey
		// set changes what partitions read before the request.
		set  map[fetchSessionKey]fetchSessionResult
		want sessionFetchOutcome
	}
	idle := func(hw int64) fetchSessionResult { return fetchSessionResult{highWatermark: hw} }
	steps := []step{
		{name: "below v7 no session", version: 6, epoch: 0, req: []fetchSessionKey{a0},
			set:  map[fetchSessionKey]fetchSessionResult{a0: idle(0), a1: idle(0), a2: idle(0), b0: idle(0)},
			want: sessionFetchOutcome{kind: fetchSessionless, fetched: []fetchSessionKey{a0}, sent: []fetchSessionKey{a0}}},
		{name: "epoch -1 no session", version: 12, epoch: -1, req: []fetchSessionKey{a0},
			want: sessionFetchOutcome{kind: fetchSessionless, fetched: []fetchSessionKey{a0}, sent: []fetchSessionKey{a0}}},
		{name: "full creates session 1", version: 12, epoch: 0, req: []fetchSessionKey{a0, a1, a2},
			want: sessionFetchOutcome{kind: fetchFull, sessionID: 1, fetched: []fetchSessionKey{a0, a1, a2}, sent: []fetchSessionKey{a0, a1, a2}}},
		{name: "idle incremental sends nothing", version: 12, id: 1, epoch: 1,
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a0, a1, a2}}},
		{name: "high watermark moved", version: 12, id: 1, epoch: 2, set: map[fetchSessionKey]fetchSessionResult{a1: idle(5)},
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a0, a1, a2}, sent: []fetchSessionKey{a1}}},
		{name: "log start offset moved", version: 12, id: 1, epoch: 3, set: map[fetchSessionKey]fetchSessionResult{a2: {logStartOffset: 3}},
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a0, a1, a2}, sent: []fetchSessionKey{a2}}},
		{name: "records sent and moved last", version: 12, id: 1, epoch: 4, set: map[fetchSessionKey]fetchSessionResult{a0: {recordsBytes: 10}},
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a0, a1, a2}, sent: []fetchSessionKey{a0}}},
		{name: "new order", version: 12, id: 1, epoch: 5,
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a1, a2, a0}}},
		{name: "an error is sent", version: 12, id: 1, epoch: 6, set: map[fetchSessionKey]fetchSessionResult{a2: {errorCode: 6, logStartOffset: 3}},
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a1, a2, a0}, sent: []fetchSessionKey{a2}}},
		// The high watermark is unchanged, but the fetcher last saw an error.
		{name: "a cleared error is sent", version: 12, id: 1, epoch: 7, set: map[fetchSessionKey]fetchSessionResult{a2: {logStartOffset: 3}},
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a1, a2, a0}, sent: []fetchSessionKey{a2}}},
		{name: "then idle again", version: 12, id: 1, epoch: 8,
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a1, a2, a0}}},
		{name: "preferred replica is sent", version: 12, id: 1, epoch: 9, set: map[fetchSessionKey]fetchSessionResult{a1: {highWatermark: 5, mustSend: true}},
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a1, a2, a0}, sent: []fetchSessionKey{a1}}},
		{name: "added partition goes last and is sent", version: 12, id: 1, epoch: 10, req: []fetchSessionKey{b0}, set: map[fetchSessionKey]fetchSessionResult{a1: idle(5)},
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a1, a2, a0, b0}, sent: []fetchSessionKey{b0}}},
		{name: "updated partition keeps its place", version: 12, id: 1, epoch: 11, req: []fetchSessionKey{a1},
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a1, a2, a0, b0}}},
		{name: "forgotten partitions leave", version: 12, id: 1, epoch: 12, forg: []fetchSessionKey{a1, a0, tp("x", 9)},
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a2, b0}}},
		{name: "wrong epoch", version: 12, id: 1, epoch: 12,
			want: sessionFetchOutcome{kind: fetchSessionError, errorCode: kerr.InvalidFetchSessionEpoch.Code}},
		{name: "right epoch after a wrong one", version: 12, id: 1, epoch: 13,
			want: sessionFetchOutcome{kind: fetchIncremental, sessionID: 1, fetched: []fetchSessionKey{a2, b0}}},
		{name: "topic ids in a session without", version: 13, id: 1, epoch: 14,
			want: sessionFetchOutcome{kind: fetchSessionError, errorCode: kerr.FetchSessionTopicIDError.Code}},
		{name: "unknown session", version: 12, id: 2, epoch: 1,
			want: sessionFetchOutcome{kind: fetchSessionError, errorCode: kerr.FetchSessionIDNotFound.Code}},
		{name: "forgetting all closes", version: 12, id: 1, epoch: 14, forg: []fetchSessionKey{a2, b0},
			want: sessionFetchOutcome{kind: fetchSessionless}},
		{name: "closed", version: 12, id: 1, epoch: 15,
			want: sessionFetchOutcome{kind: fetchSessionError, errorCode: kerr.FetchSessionIDNotFound.Code}},
		{name: "v13 session", version: 13, epoch: 0, req: []fetchSessionKey{a0},
			want: sessionFetchOutcome{kind: fetchFull, sessionID: 2, fetched: []fetchSessionKey{a0}, sent: []fetchSessionKey{a0}}},
		{name: "no topic ids in a session with", version: 12, id: 2, epoch: 1,
			want: sessionFetchOutcome{kind: fetchSessionError, errorCode: kerr.FetchSessionTopicIDError.Code}},
		{name: "full fetch naming a session replaces it", version: 13, id: 2, epoch: 0, req: []fetchSessionKey{a1},
			want: sessionFetchOutcome{kind: fetchFull, sessionID: 3, fetched: []fetchSessionKey{a1}, sent: []fetchSessionKey{a1}}},
		{name: "replaced", version: 13, id: 2, epoch: 1,
			want: sessionFetchOutcome{kind: fetchSessionError, errorCode: kerr.FetchSessionIDNotFound.Code}},
		{name: "epoch -1 closes", version: 13, id: 3, epoch: -1, req: []fetchSessionKey{a1},
			want: sessionFetchOutcome{kind: fetchSessionless, fetched: []fetchSessionKey{a1}, sent: []fetchSessionKey{a1}}},
		{name: "closed by -1", version: 13, id: 3, epoch: 1,
			want: sessionFetchOutcome{kind: fetchSessionError, errorCode: kerr.FetchSessionIDNotFound.Code}},
	}
	h := newSessionHarness(t, 10)
	for _, s := range steps {
		for k, r := range s.set {
			h.state[k] = r
		}
		got := h.fetch(0, s.version, false, s.id, s.epoch, s.req, s.forg)
		if got.kind != s.want.kind || got.errorCode != s.want.errorCode || got.sessionID != s.want.sessionID ||
			!slices.Equal(got.fetched, s.want.fetched) || !slices.Equal(got.sent, s.want.sent) {
			t.Errorf("%s:\n got %+v\nwant %+v", s.name, got, s.want)
		}
		h.checkPartitionCount()
	}
}

// TestFetchSessionRespondAfterConcurrentUse: a fetch whose session another
// request moved on meanwhile gets INVALID_FETCH_SESSION_EPOCH at its end
// and changes nothing, as Kafka's "possible duplicate request".
func TestFetchSessionRespondAfterConcurrentUse(t *testing.T) {
	h := newSessionHarness(t, 10)
	a0 := tp("a", 0)
	h.state[a0] = fetchSessionResult{highWatermark: 1}
	if out := h.fetch(0, 12, false, 0, 0, []fetchSessionKey{a0}, nil); out.sessionID != 1 {
		t.Fatalf("no session: %+v", out)
	}
	first := h.cache.newContext(0, 1, 1, 12, nil, nil)
	second := h.cache.newContext(0, 1, 2, 12, nil, nil)
	if first.kind != fetchIncremental || second.kind != fetchIncremental {
		t.Fatalf("contexts %+v %+v", first, second)
	}
	parts := first.session.partitions(nil)
	results := []fetchSessionResult{{highWatermark: 9}}
	if code := first.session.respond(first.reqEpoch, parts, results, quietContext{}); code != kerr.InvalidFetchSessionEpoch.Code {
		t.Errorf("respond at a passed epoch: %d, want INVALID_FETCH_SESSION_EPOCH", code)
	}
	if p := first.session.parts[a0]; p.highWatermark != 1 {
		t.Errorf("a refused response recorded high watermark %d", p.highWatermark)
	}
}

// TestFetchSessionEviction checks Kafka's eviction rules: stale sessions go
// first (least recently used); a fresh session is safe from consumers and
// a fresh follower session from everybody; otherwise a newcomer evicts the
// least valuable evictable session only if it is worth strictly more.
func TestFetchSessionEviction(t *testing.T) {
	const stale = fetchSessionEvictionMs + 1
	type open struct {
		atMs     int64
		follower bool
		size     int
		// touchMs, when nonzero, is an incremental fetch of the new
		// session then.
		touchMs int64
		wantID  int32 // 0: no session
		// evicted are the ids gone after this step.
		evicted []int32
	}
	for _, tc := range []struct {
		name  string
		slots int
		steps []open
	}{
		{"no slots", 0, []open{{wantID: 0}}},
		{"consumer cannot evict a fresh consumer", 1, []open{{size: 1, wantID: 1}, {atMs: 1000, size: 5, wantID: 0}}},
		{"follower evicts a fresh consumer", 1, []open{{size: 5, wantID: 1}, {atMs: 1000, follower: true, size: 1, wantID: 2, evicted: []int32{1}}}},
		{"nobody evicts a fresh follower", 1, []open{{follower: true, size: 1, wantID: 1}, {atMs: 1000, follower: true, size: 9, wantID: 0}}},
		{"stale follower goes", 1, []open{{follower: true, size: 9, wantID: 1}, {atMs: stale, size: 1, wantID: 2, evicted: []int32{1}}}},
		{"least recently used stale goes first", 2, []open{
			{size: 1, wantID: 1, touchMs: 100},
			{atMs: 10, size: 1, wantID: 2},
			{atMs: 10 + stale, size: 1, wantID: 3, evicted: []int32{2}},
		}},
		{"an old session is evicted by a bigger one only", 1, []open{
			{size: 2, wantID: 1, touchMs: stale},
			{atMs: stale + 1, size: 2, wantID: 0},
			{atMs: stale + 1, size: 3, wantID: 2, evicted: []int32{1}},
		}},
		{"an old follower session is safe from consumers while in use", 1, []open{
			{follower: true, size: 1, wantID: 1, touchMs: stale},
			{atMs: stale + 1, size: 9, wantID: 0},
			{atMs: stale + 1, follower: true, size: 2, wantID: 2, evicted: []int32{1}},
		}},
		{"the smallest evictable goes", 3, []open{
			{size: 3, wantID: 1, touchMs: stale},
			{size: 1, wantID: 2, touchMs: stale},
			{size: 2, wantID: 3, touchMs: stale},
			{atMs: stale + 1, size: 4, wantID: 4, evicted: []int32{2}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newSessionHarness(t, tc.slots)
			gone := map[int32]bool{}
			for i, st := range tc.steps {
				req := make([]fetchSessionKey, st.size)
				for p := range req {
					req[p] = tp("t", int32(p))
				}
				out := h.fetch(st.atMs, 12, st.follower, 0, 0, req, nil)
				if out.sessionID != st.wantID {
					t.Fatalf("step %d: session %d, want %d", i, out.sessionID, st.wantID)
				}
				if st.touchMs != 0 {
					if in := h.fetch(st.touchMs, 12, st.follower, out.sessionID, 1, nil, nil); in.kind != fetchIncremental {
						t.Fatalf("step %d: incremental fetch: %+v", i, in)
					}
				}
				for _, id := range st.evicted {
					gone[id] = true
				}
				for id := range gone {
					if _, in := h.cache.sessions[id]; in {
						t.Errorf("step %d: session %d still cached, want evicted", i, id)
					}
				}
				if out.sessionID != 0 && h.cache.sessions[out.sessionID] == nil {
					t.Errorf("step %d: new session %d not cached", i, out.sessionID)
				}
				h.checkPartitionCount()
			}
		})
	}
}

// TestFetchSessionPartitionBound: the cache holds at most maxPartitions
// partitions over its sessions; a full fetch past it gets no session and
// an incremental one that would grow past it loses its session.
func TestFetchSessionPartitionBound(t *testing.T) {
	h := newSessionHarness(t, 10)
	h.cache.maxPartitions = 3
	a := h.fetch(0, 12, false, 0, 0, []fetchSessionKey{tp("a", 0), tp("a", 1)}, nil)
	if a.sessionID == 0 {
		t.Fatal("first session of 2 partitions not created")
	}
	if b := h.fetch(0, 12, false, 0, 0, []fetchSessionKey{tp("b", 0), tp("b", 1)}, nil); b.sessionID != 0 {
		t.Errorf("second session of 2 partitions created past the bound of 3: id %d", b.sessionID)
	}
	h.checkPartitionCount()
	if inc := h.fetch(0, 12, false, a.sessionID, 1, []fetchSessionKey{tp("a", 2)}, nil); inc.kind != fetchIncremental {
		t.Fatalf("growing to 3 partitions: %+v", inc)
	}
	inc := h.fetch(0, 12, false, a.sessionID, 2, []fetchSessionKey{tp("a", 3)}, nil)
	if inc.errorCode != kerr.FetchSessionIDNotFound.Code {
		t.Errorf("growing past the bound: error %d, want FETCH_SESSION_ID_NOT_FOUND", inc.errorCode)
	}
	if _, ok := h.cache.sessions[a.sessionID]; ok {
		t.Error("the session that grew past the bound is still cached")
	}
	h.checkPartitionCount()
}

// partitions appends the session's partitions, in its order, to dst (all
// of them: the fetch driver skips the quiet ones, sessionReads).
func (s *fetchSession) partitions(dst []fetchSessionPartition) []fetchSessionPartition {
	for p := s.head; p != nil; p = p.next {
		dst = append(dst, fetchSessionPartition{key: p.key, params: p.params, cached: p})
	}
	return dst
}
