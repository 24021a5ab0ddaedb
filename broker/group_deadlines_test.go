package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupTimeoutsThroughTheBroker drives the coordinator's deadlines
// with raw members: a member that joined but never syncs is removed after
// the rebalance timeout, and one that stops heartbeating after its session
// timeout; the remaining member learns of it by REBALANCE_IN_PROGRESS and
// rejoins into the next generation alone.
func TestGroupTimeoutsThroughTheBroker(t *testing.T) {
	tb := startBroker(t, map[string]string{"group.min.session.timeout.ms": "500"})
	tb.createTopic("t", 2, nil)
	readyCoordinator(t, tb, "deadlines")
	join := func(t *testing.T, group, member string, sessionMs, rebalanceMs int32) *kmsg.JoinGroupResponse {
		t.Helper()
		j, err := joinRawTimeouts(tb.addr, 3, group, member, nil, sessionMs, rebalanceMs)
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, "join "+group, j.ErrorCode, noError)
		return j
	}
	// twoMembers makes a Stable group of a leader and a follower; the
	// follower syncs only when syncFollower is set.
	twoMembers := func(t *testing.T, group string, syncFollower bool) (leader, follower string, gen int32) {
		t.Helper()
		l := join(t, group, "", 30_000, 1000)
		wantCode(t, "leader sync", syncRaw(t, tb, 5, group, l.MemberID, nil, l.Generation, map[string][]byte{l.MemberID: {}}).ErrorCode, noError)
		second := make(chan *kmsg.JoinGroupResponse, 1)
		go func() {
			j, _ := joinRawTimeouts(tb.addr, 3, group, "", nil, 1000, 1000)
			second <- j
		}()
		// The leader rejoins once the second join started a rebalance.
		awaitRebalance(t, tb, group, l.MemberID, l.Generation)
		l2 := join(t, group, l.MemberID, 30_000, 1000)
		f := <-second
		if f == nil || f.ErrorCode != 0 {
			t.Fatalf("follower's join: %+v", f)
		}
		wantCode(t, "leader sync", syncRaw(t, tb, 5, group, l.MemberID, nil, l2.Generation, map[string][]byte{l.MemberID: {}, f.MemberID: {}}).ErrorCode, noError)
		if syncFollower {
			wantCode(t, "follower sync", syncRaw(t, tb, 5, group, f.MemberID, nil, l2.Generation, nil).ErrorCode, noError)
		}
		return l.MemberID, f.MemberID, l2.Generation
	}
	for _, tc := range []struct {
		name         string
		syncFollower bool
	}{
		{"follower never syncs", false},
		{"follower stops heartbeating", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := "deadlines-" + strconv.FormatBool(tc.syncFollower)
			leader, follower, gen := twoMembers(t, group, tc.syncFollower)
			awaitRebalance(t, tb, group, leader, gen)
			again := join(t, group, leader, 30_000, 1000)
			if again.Generation != gen+1 || len(again.Members) != 1 || again.Members[0].MemberID != leader {
				t.Fatalf("after the follower's removal: generation %d (want %d), members %+v", again.Generation, gen+1, again.Members)
			}
			wantCode(t, "heartbeat of the removed follower", heartbeatRaw(t, tb, 4, group, follower, nil, gen), kerr.UnknownMemberID)
		})
	}
}

// awaitRebalance heartbeats as member until the group reports a rebalance.
func awaitRebalance(t *testing.T, tb *testBroker, group, member string, gen int32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		code := heartbeatRaw(t, tb, 4, group, member, nil, gen)
		if code == kerr.RebalanceInProgress.Code {
			return
		}
		wantCode(t, "heartbeat while waiting for a rebalance", code, noError)
		if time.Now().After(deadline) {
			t.Fatalf("group %s never started a rebalance", group)
		}
	}
}

// TestGroupMaxSizeLoweredAcrossRestart restarts the broker with a lower
// group.max.size than a loaded group's size: the coordinator rebalances the
// group at load, accepts rejoins up to the new limit and answers the rest
// GROUP_MAX_SIZE_REACHED, as Kafka does.
func TestGroupMaxSizeLoweredAcrossRestart(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("t", 2, nil)
	const group = "shrinking"
	readyCoordinator(t, tb, group)
	first := mustJoinTimeouts(t, tb, group, "", 30_000, 2000)
	wantCode(t, "first sync", syncRaw(t, tb, 5, group, first.MemberID, nil, first.Generation, map[string][]byte{first.MemberID: {}}).ErrorCode, noError)
	second := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		j, _ := joinRawTimeouts(tb.addr, 3, group, "", nil, 30_000, 2000)
		second <- j
	}()
	awaitRebalance(t, tb, group, first.MemberID, first.Generation)
	rejoined := mustJoinTimeouts(t, tb, group, first.MemberID, 30_000, 2000)
	other := <-second
	if other == nil || other.ErrorCode != 0 {
		t.Fatalf("second member's join: %+v", other)
	}
	gen := rejoined.Generation
	wantCode(t, "leader sync", syncRaw(t, tb, 5, group, first.MemberID, nil, gen, map[string][]byte{first.MemberID: {}, other.MemberID: {}}).ErrorCode, noError)
	wantCode(t, "follower sync", syncRaw(t, tb, 5, group, other.MemberID, nil, gen, nil).ErrorCode, noError)

	tb.props["group.max.size"] = "1"
	tb.restart()
	readyCoordinator(t, tb, group)
	awaitRebalance(t, tb, group, first.MemberID, gen)

	results := make(chan *kmsg.JoinGroupResponse, 2)
	for _, id := range []string{first.MemberID, other.MemberID} {
		go func() {
			j, _ := joinRawTimeouts(tb.addr, 3, group, id, nil, 30_000, 2000)
			results <- j
		}()
	}
	var accepted, refused int
	for range 2 {
		j := <-results
		switch {
		case j == nil:
			t.Fatal("rejoin failed")
		case j.ErrorCode == kerr.GroupMaxSizeReached.Code:
			refused++
		case j.ErrorCode == 0 && j.Generation == gen+1 && len(j.Members) == 1 && j.Members[0].MemberID == j.MemberID:
			accepted++
		default:
			t.Fatalf("rejoin: code %v generation %d members %d", kerr.ErrorForCode(j.ErrorCode), j.Generation, len(j.Members))
		}
	}
	if accepted != 1 || refused != 1 {
		t.Fatalf("%d rejoins accepted and %d refused, want one of each", accepted, refused)
	}
}

func mustJoinTimeouts(t *testing.T, tb *testBroker, group, member string, sessionMs, rebalanceMs int32) *kmsg.JoinGroupResponse {
	t.Helper()
	j, err := joinRawTimeouts(tb.addr, 3, group, member, nil, sessionMs, rebalanceMs)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "join "+group, j.ErrorCode, noError)
	return j
}
