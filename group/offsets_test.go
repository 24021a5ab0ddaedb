package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (h *harness) commit(memberID string, gen int32, entries map[topicPartition]offsetEntry) []int16 {
	a := commitArgs{groupID: "g", memberID: memberID, generation: gen}
	for _, tp := range sortedTPs(entries) {
		a.partitions = append(a.partitions, commitPartition{tp: tp, entry: entries[tp]})
	}
	var codes []int16
	h.run(func(eff *effects) { codes = h.s.commit(a, h.now, eff, nil) })
	return codes
}

func sortedTPs(m map[topicPartition]offsetEntry) []topicPartition {
	g := &group{offsets: m}
	return g.sortedOffsetPartitions()
}

func entry(offset int64, meta string) offsetEntry {
	return offsetEntry{offset: offset, leaderEpoch: -1, metadata: meta, expireTimestamp: -1}
}

var tp0 = topicPartition{"t", 0}

func TestCommitValidation(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(h *harness) (member string, gen int32)
		want   *kerr.Error
		stored bool
	}{
		{"simple consumer, new group", func(h *harness) (string, int32) { return "", -1 }, nil, true},
		{"admin with a member id, empty group", func(h *harness) (string, int32) {
			a := h.stableOne()
			h.run(func(eff *effects) { h.s.leave("g", []leavingMember{{memberID: a}}, h.now, eff) })
			return "admin", -1
		}, nil, true},
		{"generation for unknown group", func(h *harness) (string, int32) { return "m", 3 }, kerr.IllegalGeneration, false},
		{"member of stable group", func(h *harness) (string, int32) { return h.stableOne(), 1 }, nil, true},
		{"stale generation", func(h *harness) (string, int32) { return h.stableOne(), 0 }, kerr.IllegalGeneration, false},
		{"unknown member", func(h *harness) (string, int32) { h.stableOne(); return "ghost", 1 }, kerr.UnknownMemberID, false},
		{"non-member into non-empty group", func(h *harness) (string, int32) { h.stableOne(); return "", -1 }, kerr.UnknownMemberID, false},
		{"completing rebalance", func(h *harness) (string, int32) {
			r := mustJoin(h.t, h.join())
			return r.memberID, r.generation
		}, kerr.RebalanceInProgress, false},
		{"preparing rebalance", func(h *harness) (string, int32) {
			a := h.stableOne()
			h.join()
			return a, 1
		}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testLimits())
			m, gen := tc.setup(h)
			h.completeWrites(nil)
			codes := h.commit(m, gen, map[topicPartition]offsetEntry{tp0: entry(42, "meta")})
			h.completeWrites(nil)
			wantCode(t, "commit", codes[0], tc.want)
			got := h.s.fetchOffsets("g", []topicPartition{tp0}, false)
			if stored := got[0].offset == 42; stored != tc.stored {
				t.Fatalf("stored = %v, want %v (%+v)", stored, tc.stored, got[0])
			}
			if tc.stored && got[0].metadata != "meta" {
				t.Fatalf("metadata %q", got[0].metadata)
			}
		})
	}
}

func TestCommitUnknownGroupV9(t *testing.T) {
	h := newHarness(t, testLimits())
	var codes []int16
	a := commitArgs{groupID: "g", memberID: "m", generation: 1, unknownGroupNotFound: true,
		partitions: []commitPartition{{tp: tp0, entry: entry(1, "")}}}
	h.run(func(eff *effects) { codes = h.s.commit(a, h.now, eff, nil) })
	wantCode(t, "v9 commit", codes[0], kerr.GroupIDNotFound)
}

func TestJavaLength(t *testing.T) {
	for s, want := range map[string]int{"": 0, "abc": 3, "é": 1, "\U0001F600": 2} {
		if got := javaLength(s); got != want {
			t.Errorf("javaLength(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestCommitMetadataTooLarge(t *testing.T) {
	h := newHarness(t, testLimits())
	codes := h.commit("", -1, map[topicPartition]offsetEntry{
		{"t", 0}: entry(1, "this metadata is longer than sixteen bytes"),
		{"t", 1}: entry(2, "short"),
	})
	h.completeWrites(nil)
	wantCode(t, "too large", codes[0], kerr.OffsetMetadataTooLarge)
	wantCode(t, "fits", codes[1], nil)
	got := h.s.fetchOffsets("g", nil, false)
	if len(got) != 1 || got[0].tp.partition != 1 || got[0].offset != 2 {
		t.Fatalf("fetch all: %+v", got)
	}
}

func TestCommitAppendFailure(t *testing.T) {
	h := newHarness(t, testLimits())
	a := commitArgs{groupID: "g", generation: -1, partitions: []commitPartition{{tp: tp0, entry: entry(5, "")}}}
	var codes []int16
	h.run(func(eff *effects) { codes = h.s.commit(a, h.now, eff, nil) })
	h.completeWrites(kerr.NotLeaderForPartition)
	wantCode(t, "commit", codes[0], kerr.NotCoordinator)
	if got := h.s.fetchOffsets("g", []topicPartition{tp0}, false); got[0].offset != -1 {
		t.Fatalf("failed commit visible: %+v", got[0])
	}
}

func TestFetchRequireStable(t *testing.T) {
	h := newHarness(t, testLimits())
	h.commit("", -1, map[topicPartition]offsetEntry{tp0: entry(1, "")})
	h.completeWrites(nil)
	h.commit("", -1, map[topicPartition]offsetEntry{tp0: entry(2, "")})
	got := h.s.fetchOffsets("g", []topicPartition{tp0}, true)
	wantCode(t, "require stable, pending", got[0].err, kerr.UnstableOffsetCommit)
	got = h.s.fetchOffsets("g", []topicPartition{tp0}, false)
	if got[0].err != 0 || got[0].offset != 1 {
		t.Fatalf("without require_stable: %+v", got[0])
	}
	h.completeWrites(nil)
	got = h.s.fetchOffsets("g", []topicPartition{tp0}, true)
	if got[0].err != 0 || got[0].offset != 2 {
		t.Fatalf("after the commit: %+v", got[0])
	}
	if got := h.s.fetchOffsets("other", []topicPartition{tp0}, true); got[0].offset != -1 || got[0].err != 0 {
		t.Fatalf("unknown group: %+v", got[0])
	}
}

func TestOffsetExpiry(t *testing.T) {
	cases := []struct {
		name string
		// setup commits offset 1 to t-0 at the harness's start time.
		setup      func(h *harness)
		after      time.Duration
		wantGone   bool
		groupGone  bool
		expireTsMs int64
	}{
		{"simple consumer, before retention", func(h *harness) {}, 59 * time.Minute, false, false, -1},
		{"simple consumer, after retention", func(h *harness) {}, time.Hour, true, true, -1},
		{"explicit expire timestamp", func(h *harness) {}, 10 * time.Minute, true, true, 10 * 60 * 1000},
		{"stable group keeps subscribed topic", func(h *harness) {
			h.stableOne(withProtocols(protocol{name: "range", metadata: consumerMeta("t")}))
		}, 2 * time.Hour, false, false, -1},
		{"stable group loses unsubscribed topic", func(h *harness) {
			h.stableOne(withProtocols(protocol{name: "range", metadata: consumerMeta("other")}))
		}, 2 * time.Hour, true, false, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testLimits())
			h.s.limits.maxSessionTimeout = 24 * time.Hour
			tc.setup(h)
			e := entry(1, "")
			e.commitTimestamp = h.now.UnixMilli()
			if tc.expireTsMs >= 0 {
				e.expireTimestamp = h.now.UnixMilli() + tc.expireTsMs
			}
			h.run(func(eff *effects) {
				var a commitArgs
				if g := h.group(); g != nil && len(g.members) > 0 {
					a = commitArgs{groupID: "g", memberID: g.leader, generation: g.generation}
				} else {
					a = commitArgs{groupID: "g", generation: -1}
				}
				a.partitions = []commitPartition{{tp: tp0, entry: e}}
				h.s.commit(a, h.now, eff, nil)
			})
			h.completeWrites(nil)
			h.now = h.now.Add(tc.after)
			if g := h.group(); g != nil {
				for _, m := range g.members {
					resetHeartbeat(m, h.now) // keep members alive across the jump
				}
			}
			h.run(func(eff *effects) { h.s.expireOffsets(h.now, eff) })
			before := len(h.written)
			h.completeWrites(nil)
			got := h.s.fetchOffsets("g", []topicPartition{tp0}, false)
			if gone := got[0].offset == -1; gone != tc.wantGone {
				t.Fatalf("offset gone = %v, want %v", gone, tc.wantGone)
			}
			if gone := h.group() == nil; gone != tc.groupGone {
				t.Fatalf("group gone = %v, want %v", gone, tc.groupGone)
			}
			if tc.wantGone && len(h.written) == before {
				t.Fatal("no tombstone written")
			}
		})
	}
}

func TestEmptyConsumerGroupExpiryCountsFromEmpty(t *testing.T) {
	h := newHarness(t, testLimits())
	a := h.stableOne()
	h.commit(a, 1, map[topicPartition]offsetEntry{tp0: {offset: 1, leaderEpoch: -1, commitTimestamp: h.now.UnixMilli(), expireTimestamp: -1}})
	h.completeWrites(nil)
	// Stay a member for two hours, then leave: retention counts from then.
	for i := 0; i < 1440; i++ {
		h.advance(5 * time.Second)
		h.heartbeat(a, 1)
	}
	h.run(func(eff *effects) { h.s.leave("g", []leavingMember{{memberID: a}}, h.now, eff) })
	wantState(t, h.group(), StateEmpty)
	h.now = h.now.Add(59 * time.Minute)
	h.run(func(eff *effects) { h.s.expireOffsets(h.now, eff) })
	if got := h.s.fetchOffsets("g", []topicPartition{tp0}, false); got[0].offset != 1 {
		t.Fatal("offsets expired before the retention since the group became empty")
	}
	h.now = h.now.Add(time.Minute)
	h.run(func(eff *effects) { h.s.expireOffsets(h.now, eff) })
	if h.group() != nil {
		t.Fatal("expired empty group still present")
	}
}

func TestDeleteGroup(t *testing.T) {
	h := newHarness(t, testLimits())
	code, _ := h.s.deleteGroup("g", h.now)
	wantCode(t, "unknown", code, kerr.GroupIDNotFound)
	a := h.stableOne()
	code, _ = h.s.deleteGroup("g", h.now)
	wantCode(t, "non-empty", code, kerr.NonEmptyGroup)
	h.commit(a, 1, map[topicPartition]offsetEntry{tp0: entry(1, "")})
	h.completeWrites(nil)
	h.run(func(eff *effects) { h.s.leave("g", []leavingMember{{memberID: a}}, h.now, eff) })
	code, recs := h.s.deleteGroup("g", h.now)
	wantCode(t, "empty", code, nil)
	if len(recs) != 2 || recs[0].value != nil || recs[1].value != nil {
		t.Fatalf("tombstones %+v", recs)
	}
	if h.group() != nil {
		t.Fatal("deleted group still present")
	}
}

func TestDeleteOffsets(t *testing.T) {
	h := newHarness(t, testLimits())
	code, _, _ := h.s.deleteOffsets("g", []topicPartition{tp0}, h.now)
	wantCode(t, "unknown group", code, kerr.GroupIDNotFound)

	a := h.stableOne(withProtocols(protocol{name: "range", metadata: consumerMeta("t")}))
	other := topicPartition{"u", 0}
	h.commit(a, 1, map[topicPartition]offsetEntry{tp0: entry(1, ""), other: entry(2, "")})
	h.completeWrites(nil)
	code, codes, recs := h.s.deleteOffsets("g", []topicPartition{tp0, other}, h.now)
	wantCode(t, "group", code, nil)
	wantCode(t, "subscribed", codes[0], kerr.GroupSubscribedToTopic)
	wantCode(t, "not subscribed", codes[1], nil)
	if len(recs) != 1 {
		t.Fatalf("%d tombstones, want 1", len(recs))
	}

	h2 := newHarness(t, testLimits())
	h2.stableOne(withProtocolType("connect"))
	code, _, _ = h2.s.deleteOffsets("g", []topicPartition{tp0}, h2.now)
	wantCode(t, "non-consumer group with members", code, kerr.NonEmptyGroup)
}

func TestDescribe(t *testing.T) {
	h := newHarness(t, testLimits())
	if sum, found := h.s.describe("g"); found || sum.state != "Dead" {
		t.Fatalf("unknown group: %+v %v", sum, found)
	}
	r := mustJoin(t, h.join())
	sum, _ := h.s.describe("g")
	if sum.state != "CompletingRebalance" || sum.protocolName != "" || len(sum.members) != 1 || sum.members[0].metadata != nil {
		t.Fatalf("completing: %+v", sum)
	}
	h.sync(r.memberID, 1, map[string][]byte{r.memberID: []byte("A")})
	h.completeWrites(nil)
	sum, _ = h.s.describe("g")
	m := sum.members[0]
	if sum.state != "Stable" || sum.protocolName != "range" || string(m.metadata) != "m" || string(m.assignment) != "A" || m.clientHost != "/127.0.0.1" {
		t.Fatalf("stable: %+v", sum)
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	h := newHarness(t, testLimits())
	a := h.stableOne(withInstance("i1"))
	h.commit(a, 1, map[topicPartition]offsetEntry{tp0: entry(7, "md")})
	h.completeWrites(nil)
	l := newLoader()
	for _, recs := range h.written {
		for _, r := range recs {
			if ok, err := l.apply(r.key, r.value); err != nil || !ok {
				t.Fatalf("apply: %v %v", ok, err)
			}
		}
	}
	groups := l.build(h.now)
	g := groups["g"]
	if g == nil || g.state != StateStable || g.generation != 1 || g.leader != a || g.static["i1"] != a {
		t.Fatalf("reloaded group %+v", g)
	}
	if o := g.offsets[tp0]; o.offset != 7 || o.metadata != "md" {
		t.Fatalf("reloaded offset %+v", o)
	}
	if string(g.members[a].assignment) != "a" {
		t.Fatalf("assignment %q", g.members[a].assignment)
	}
	// Kafka's schemas: offset key v1, value v3; group key v2, value v3.
	var k kmsg.OffsetCommitKey
	var v kmsg.OffsetCommitValue
	last := h.written[len(h.written)-1][0]
	if err := k.ReadFrom(last.key); err != nil || k.Version != 1 {
		t.Fatalf("offset key version %d: %v", k.Version, err)
	}
	if err := v.ReadFrom(last.value); err != nil || v.Version != 3 {
		t.Fatalf("offset value version %d: %v", v.Version, err)
	}
	var gv kmsg.GroupMetadataValue
	if err := gv.ReadFrom(h.written[0][0].value); err != nil || gv.Version != 3 {
		t.Fatalf("group value version %d: %v", gv.Version, err)
	}
}
