package group

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestJoinMemberIDRequiredThenStable(t *testing.T) {
	h := newHarness(t, testLimits())
	r := mustJoin(t, h.join(withKIP394()))
	wantCode(t, "first join", r.err, kerr.MemberIDRequired)
	if r.memberID == "" {
		t.Fatal("MEMBER_ID_REQUIRED without a member id")
	}
	wantState(t, h.group(), StateEmpty)

	r2 := mustJoin(t, h.join(withKIP394(), withMember(r.memberID)))
	wantCode(t, "second join", r2.err, nil)
	if r2.memberID != r.memberID || r2.leader != r.memberID || r2.generation != 1 || r2.protocolName != "range" {
		t.Fatalf("join result %+v", r2)
	}
	if len(r2.members) != 1 || string(r2.members[0].metadata) != "m" {
		t.Fatalf("leader members %+v", r2.members)
	}
	wantState(t, h.group(), StateCompletingRebalance)

	s := h.sync(r.memberID, 1, map[string][]byte{r.memberID: []byte("assignment")})
	noSync(t, s) // not before the assignment is durable
	h.completeWrites(nil)
	sr := mustSync(t, s)
	wantCode(t, "sync", sr.err, nil)
	if string(sr.assignment) != "assignment" || sr.protocolName != "range" || sr.protocolType != "consumer" {
		t.Fatalf("sync result %+v", sr)
	}
	wantState(t, h.group(), StateStable)
	if len(h.written) != 1 {
		t.Fatalf("%d writes, want the group metadata", len(h.written))
	}
}

func TestJoinOldVersionOneRoundTrip(t *testing.T) {
	h := newHarness(t, testLimits())
	r := mustJoin(t, h.join())
	wantCode(t, "join", r.err, nil)
	if r.memberID == "" || r.generation != 1 {
		t.Fatalf("join result %+v", r)
	}
}

func TestJoinErrors(t *testing.T) {
	cases := []struct {
		name  string
		setup func(h *harness)
		opts  []joinOpt
		want  *kerr.Error
	}{
		{"session timeout below min", nil, []joinOpt{withSession(time.Millisecond)}, kerr.InvalidSessionTimeout},
		{"session timeout above max", nil, []joinOpt{withSession(time.Hour)}, kerr.InvalidSessionTimeout},
		{"unknown member of unknown group", nil, []joinOpt{withMember("nobody")}, kerr.UnknownMemberID},
		{"unknown member of known group", func(h *harness) { h.stableOne() }, []joinOpt{withMember("nobody")}, kerr.UnknownMemberID},
		{"empty protocol type", nil, []joinOpt{withProtocolType("")}, kerr.InconsistentGroupProtocol},
		{"no protocols", nil, []joinOpt{withProtocols()}, kerr.InconsistentGroupProtocol},
		{"other protocol type", func(h *harness) { h.stableOne() }, []joinOpt{withProtocolType("connect")}, kerr.InconsistentGroupProtocol},
		{"no common protocol", func(h *harness) { h.stableOne() }, []joinOpt{withProtocols(protocol{name: "sticky"})}, kerr.InconsistentGroupProtocol},
		{"group full", func(h *harness) {
			h.s.limits.maxGroupSize = 1
			h.stableOne()
		}, nil, kerr.GroupMaxSizeReached},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testLimits())
			if tc.setup != nil {
				tc.setup(h)
			}
			r := mustJoin(t, h.join(tc.opts...))
			wantCode(t, "join", r.err, tc.want)
			if r.generation != -1 {
				t.Fatalf("error with generation %d", r.generation)
			}
		})
	}
}

func TestRebalanceTwoMembers(t *testing.T) {
	h := newHarness(t, testLimits())
	a := h.stableOne()

	bj := h.join(withProtocols(rangeProtocol("b")))
	noJoin(t, bj)
	wantState(t, h.group(), StatePreparingRebalance)
	wantCode(t, "heartbeat during rebalance", h.heartbeat(a, 1), kerr.RebalanceInProgress)
	wantCode(t, "sync during rebalance", mustSync(t, h.sync(a, 1, nil)).err, kerr.RebalanceInProgress)

	aj := h.join(withMember(a))
	ar, br := mustJoin(t, aj), mustJoin(t, bj)
	wantCode(t, "a join", ar.err, nil)
	wantCode(t, "b join", br.err, nil)
	if ar.generation != 2 || br.generation != 2 || ar.leader != a || br.leader != a {
		t.Fatalf("generation/leader: a %+v b %+v", ar, br)
	}
	if len(ar.members) != 2 || len(br.members) != 0 {
		t.Fatalf("leader got %d members, follower %d", len(ar.members), len(br.members))
	}
	wantCode(t, "stale generation heartbeat", h.heartbeat(a, 1), kerr.IllegalGeneration)
	wantCode(t, "stale generation sync", mustSync(t, h.sync(a, 1, nil)).err, kerr.IllegalGeneration)
	wantCode(t, "heartbeat while completing", h.heartbeat(br.memberID, 2), nil)

	bs := h.sync(br.memberID, 2, nil)
	noSync(t, bs)
	as := h.sync(a, 2, map[string][]byte{a: []byte("A"), br.memberID: []byte("B")})
	h.completeWrites(nil)
	if got := mustSync(t, bs); got.err != 0 || string(got.assignment) != "B" {
		t.Fatalf("follower sync %+v", got)
	}
	if got := mustSync(t, as); got.err != 0 || string(got.assignment) != "A" {
		t.Fatalf("leader sync %+v", got)
	}
	wantState(t, h.group(), StateStable)

	// A follower's rejoin with unchanged metadata does not rebalance.
	fr := mustJoin(t, h.join(withMember(br.memberID), withProtocols(rangeProtocol("b"))))
	wantCode(t, "follower rejoin", fr.err, nil)
	wantState(t, h.group(), StateStable)
	// The leader's does.
	noJoin(t, h.join(withMember(a)))
	wantState(t, h.group(), StatePreparingRebalance)
}

func TestSyncStoreFailurePropagates(t *testing.T) {
	h := newHarness(t, testLimits())
	r := mustJoin(t, h.join())
	s := h.sync(r.memberID, 1, map[string][]byte{r.memberID: []byte("x")})
	h.completeWrites(kerr.NotEnoughReplicas)
	wantCode(t, "sync", mustSync(t, s).err, kerr.CoordinatorNotAvailable)
	// The group starts over: with one member and nobody waiting to join
	// it stays in PreparingRebalance until the member rejoins.
	wantState(t, h.group(), StatePreparingRebalance)
}

func TestSessionTimeoutExpiry(t *testing.T) {
	h := newHarness(t, testLimits())
	a := h.stableOne()
	h.advance(9 * time.Second)
	wantCode(t, "heartbeat", h.heartbeat(a, 1), nil)
	h.advance(9 * time.Second)
	wantState(t, h.group(), StateStable)
	h.advance(2 * time.Second)
	// The only member expired: the group rebalances to an empty generation.
	wantState(t, h.group(), StateEmpty)
	if h.group().generation != 2 || len(h.group().members) != 0 {
		t.Fatalf("generation %d, %d members", h.group().generation, len(h.group().members))
	}
	wantCode(t, "heartbeat after expiry", h.heartbeat(a, 2), kerr.UnknownMemberID)
}

func TestRebalanceTimeoutRemovesSilentMember(t *testing.T) {
	h := newHarness(t, testLimits())
	a := h.stableOne()
	bj := h.join(withProtocols(rangeProtocol("b")))
	aj := h.join(withMember(a))
	b := mustJoin(t, bj).memberID
	mustJoin(t, aj)
	as := h.sync(a, 2, nil)
	h.sync(b, 2, nil)
	h.completeWrites(nil)
	mustSync(t, as)

	// b changes its metadata; a keeps heartbeating but never rejoins.
	bj = h.join(withMember(b), withProtocols(rangeProtocol("b2")))
	for i := 0; i < 3; i++ {
		h.advance(9 * time.Second)
		h.heartbeat(a, 2)
	}
	noJoin(t, bj)
	h.advance(4 * time.Second) // past the 30s rebalance timeout
	r := mustJoin(t, bj)
	wantCode(t, "join", r.err, nil)
	if r.leader != b || len(r.members) != 1 || r.generation != 3 {
		t.Fatalf("after rebalance timeout: %+v", r)
	}
	if _, ok := h.group().members[a]; ok {
		t.Fatal("silent member still in the group")
	}
}

func TestInitialRebalanceDelay(t *testing.T) {
	l := testLimits()
	l.initialRebalanceDelay = 3 * time.Second
	h := newHarness(t, l)
	aj := h.join(withRebalance(10 * time.Second))
	wantState(t, h.group(), StatePreparingRebalance)
	h.advance(2 * time.Second)
	bj := h.join(withRebalance(10 * time.Second))
	h.advance(time.Second) // delay ran out, but b arrived: extended
	noJoin(t, aj)
	h.advance(2 * time.Second)
	noJoin(t, aj)
	h.advance(time.Second)
	ar, br := mustJoin(t, aj), mustJoin(t, bj)
	if ar.generation != 1 || br.generation != 1 || len(ar.members)+len(br.members) != 2 {
		t.Fatalf("a %+v b %+v", ar, br)
	}
}

func TestInitialRebalanceDelayBoundedByRebalanceTimeout(t *testing.T) {
	l := testLimits()
	l.initialRebalanceDelay = 3 * time.Second
	h := newHarness(t, l)
	aj := h.join(withRebalance(5 * time.Second))
	// Members keep arriving every second, but the delay may add at most
	// the rebalance timeout minus one delay (2s) to the first 3s.
	for i := 1; i < 5; i++ {
		h.advance(time.Second)
		noJoin(t, aj)
		h.join(withRebalance(5 * time.Second))
	}
	h.advance(time.Second)
	r := mustJoin(t, aj)
	if r.err != 0 || len(r.members) != 5 {
		t.Fatalf("join after 5s: err %d, %d members", r.err, len(r.members))
	}
}

func TestPendingMemberExpires(t *testing.T) {
	h := newHarness(t, testLimits())
	r := mustJoin(t, h.join(withKIP394()))
	h.advance(11 * time.Second)
	wantCode(t, "late rejoin", mustJoin(t, h.join(withKIP394(), withMember(r.memberID))).err, kerr.UnknownMemberID)
}

func TestSyncTimeoutRemovesMembersWithoutSync(t *testing.T) {
	h := newHarness(t, testLimits())
	a := h.stableOne()
	bj := h.join()
	aj := h.join(withMember(a))
	b := mustJoin(t, bj).memberID
	mustJoin(t, aj)
	as := h.sync(a, 2, nil)
	h.completeWrites(nil)
	mustSync(t, as)
	wantState(t, h.group(), StateStable)
	for i := 0; i < 4; i++ {
		h.advance(8 * time.Second)
		h.heartbeat(a, 2)
	}
	if _, ok := h.group().members[b]; ok {
		t.Fatal("member that never synced is still in the group")
	}
	wantState(t, h.group(), StatePreparingRebalance)
}

func TestStaticMemberRejoinWithoutRebalance(t *testing.T) {
	h := newHarness(t, testLimits())
	old := h.stableOne(withInstance("i1"))
	j := h.join(withInstance("i1"))
	noJoin(t, j) // the new member id must be durable first
	h.completeWrites(nil)
	r := mustJoin(t, j)
	wantCode(t, "static rejoin", r.err, nil)
	if r.memberID == old || r.generation != 1 || r.leader != old {
		t.Fatalf("static rejoin %+v (old id %s)", r, old)
	}
	wantState(t, h.group(), StateStable)
	wantCode(t, "old id heartbeat", h.s.heartbeat("g", old, "i1", 1, h.now), kerr.FencedInstanceID)
	wantCode(t, "new id heartbeat", h.s.heartbeat("g", r.memberID, "i1", 1, h.now), nil)
	if got := mustSync(t, h.sync(r.memberID, 1, nil)); string(got.assignment) != "a" {
		t.Fatalf("assignment kept across restart: %q", got.assignment)
	}
}

func TestStaticMemberRejoinStoreFailureReverts(t *testing.T) {
	h := newHarness(t, testLimits())
	old := h.stableOne(withInstance("i1"))
	j := h.join(withInstance("i1"))
	h.completeWrites(kerr.NotLeaderForPartition)
	wantCode(t, "rejoin", mustJoin(t, j).err, kerr.NotCoordinator)
	wantCode(t, "old id still valid", h.s.heartbeat("g", old, "i1", 1, h.now), nil)
}

func TestStaticMemberFencing(t *testing.T) {
	h := newHarness(t, testLimits())
	h.stableOne(withInstance("i1"))
	wantCode(t, "wrong member for instance",
		mustJoin(t, h.join(withInstance("i1"), withMember("someone-else"))).err, kerr.FencedInstanceID)
	wantCode(t, "unknown instance with member id",
		mustJoin(t, h.join(withInstance("i2"), withMember("x"))).err, kerr.UnknownMemberID)
}

func TestStaticMemberSurvivesRebalanceWithoutRejoin(t *testing.T) {
	h := newHarness(t, testLimits())
	s := h.stableOne(withInstance("i1"))
	bj := h.join()
	// The static member heartbeats but never rejoins until the rebalance
	// times out.
	for i := 0; i < 4; i++ {
		h.advance(8 * time.Second)
		h.s.heartbeat("g", s, "i1", 1, h.now)
	}
	r := mustJoin(t, bj)
	wantCode(t, "join", r.err, nil)
	if _, ok := h.group().members[s]; !ok {
		t.Fatal("static member dropped by the rebalance timeout")
	}
}

func TestLeaveGroup(t *testing.T) {
	h := newHarness(t, testLimits())
	a := h.stableOne(withInstance("i1"))
	var top int16
	var codes []int16
	h.run(func(eff *effects) {
		top, codes = h.s.leave("g", []leavingMember{
			{memberID: "", instanceID: "i1"},
			{memberID: "ghost"},
			{memberID: "", instanceID: "i9"},
		}, h.now, eff)
	})
	wantCode(t, "top", top, nil)
	wantCode(t, "by instance", codes[0], nil)
	wantCode(t, "unknown member", codes[1], kerr.UnknownMemberID)
	wantCode(t, "unknown instance", codes[2], kerr.UnknownMemberID)
	if _, ok := h.group().members[a]; ok {
		t.Fatal("member still there after leaving")
	}
	wantState(t, h.group(), StateEmpty)

	h.run(func(eff *effects) { _, codes = h.s.leave("nope", []leavingMember{{memberID: "x"}}, h.now, eff) })
	wantCode(t, "unknown group", codes[0], kerr.UnknownMemberID)
}

func TestLeaveDuringJoinCompletesRebalance(t *testing.T) {
	h := newHarness(t, testLimits())
	a := h.stableOne()
	bj := h.join()
	noJoin(t, bj)
	h.run(func(eff *effects) { h.s.leave("g", []leavingMember{{memberID: a}}, h.now, eff) })
	r := mustJoin(t, bj)
	if r.err != 0 || len(r.members) != 1 {
		t.Fatalf("join after the other member left: %+v", r)
	}
}

func TestDeadGroupAnswersCoordinatorNotAvailable(t *testing.T) {
	h := newHarness(t, testLimits())
	a := h.stableOne()
	h.group().state = StateDead
	wantCode(t, "heartbeat", h.heartbeat(a, 1), kerr.CoordinatorNotAvailable)
	wantCode(t, "sync", mustSync(t, h.sync(a, 1, nil)).err, kerr.CoordinatorNotAvailable)
	wantCode(t, "join", mustJoin(t, h.join(withMember(a))).err, kerr.CoordinatorNotAvailable)
}

func TestSyncProtocolMismatch(t *testing.T) {
	h := newHarness(t, testLimits())
	a := h.stableOne()
	other := "sticky"
	ch := make(chan syncResult, 1)
	h.run(func(eff *effects) {
		h.s.sync(syncArgs{groupID: "g", generation: 1, memberID: a, protocolName: &other, waiter: ch}, h.now, eff)
	})
	wantCode(t, "sync", mustSync(t, ch).err, kerr.InconsistentGroupProtocol)
}

func TestCompletingRebalanceRejoinSameMetadata(t *testing.T) {
	h := newHarness(t, testLimits())
	r := mustJoin(t, h.join())
	again := mustJoin(t, h.join(withMember(r.memberID)))
	if again.err != 0 || again.generation != r.generation || len(again.members) != 1 {
		t.Fatalf("lost-response rejoin: %+v", again)
	}
	wantState(t, h.group(), StateCompletingRebalance)
	if !bytes.Equal(again.members[0].metadata, []byte("m")) {
		t.Fatalf("metadata %q", again.members[0].metadata)
	}
}

func TestStaticLeaderRejoinSkipAssignment(t *testing.T) {
	for _, skip := range []bool{false, true} {
		h := newHarness(t, testLimits())
		old := h.stableOne(withInstance("i1"))
		j := h.join(withInstance("i1"), func(a *joinArgs) { a.supportSkipAssignment = skip })
		h.completeWrites(nil)
		r := mustJoin(t, j)
		wantCode(t, "rejoin", r.err, nil)
		if skip {
			// v9+: the restarted leader is told it leads, with the
			// members, and not to assign.
			if r.leader != r.memberID || !r.skipAssignment || len(r.members) != 1 {
				t.Fatalf("v9 static leader rejoin: %+v", r)
			}
		} else if r.leader != old || r.skipAssignment || len(r.members) != 0 {
			t.Fatalf("old static leader rejoin: %+v", r)
		}
		wantState(t, h.group(), StateStable)
	}
}

func TestRejoinUpdatesTimeouts(t *testing.T) {
	h := newHarness(t, testLimits())
	a := h.stableOne()
	mustJoin(t, h.join(withMember(a), withSession(20*time.Second), withRebalance(time.Minute)))
	m := h.group().members[a]
	if m.sessionTimeout != 20*time.Second || m.rebalanceTimeout != time.Minute {
		t.Fatalf("timeouts %v %v", m.sessionTimeout, m.rebalanceTimeout)
	}
}

func TestMetadataChangeWhileCompletingRestartsRebalance(t *testing.T) {
	h := newHarness(t, testLimits())
	a := h.stableOne()
	bj := h.join()
	aj := h.join(withMember(a))
	b := mustJoin(t, bj).memberID
	mustJoin(t, aj)
	wantState(t, h.group(), StateCompletingRebalance)
	bs := h.sync(b, 2, nil) // the follower waits for the leader's assignment
	noSync(t, bs)
	bj = h.join(withMember(b), withProtocols(rangeProtocol("changed")))
	wantState(t, h.group(), StatePreparingRebalance)
	wantCode(t, "waiting follower sync", mustSync(t, bs).err, kerr.RebalanceInProgress)
	noJoin(t, bj)
}
