package broker

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Each group error code provoked through the real broker with raw requests
// at pinned versions, as old and new clients send them.

func TestGroupCoordinatorNotReady(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("t", 2, nil)
	// Before __consumer_offsets exists, this broker leads none of its
	// partitions: group requests get NOT_COORDINATOR, as from a broker that
	// is not the group's coordinator.
	wantCode(t, "heartbeat before the offsets topic", heartbeatRaw(t, tb, 4, "early", "m", nil, 1), kerr.NotCoordinator)
	wantCodes(t, "commit before the offsets topic", commitRaw(t, tb, 8, "early", "", nil, -1, "", 1), 1, kerr.NotCoordinator)
	j := mustJoin(t, tb, 5, "early", "", nil)
	wantCode(t, "join before the offsets topic", j.ErrorCode, kerr.NotCoordinator)
	// OffsetFetch has no top-level error before v2: every partition carries it.
	code, parts := offsetFetchRaw(t, tb, 1, "early", 2)
	wantCode(t, "offset fetch v1 before the offsets topic", code, noError)
	for p, f := range parts {
		if f.ErrorCode != kerr.NotCoordinator.Code || f.Offset != -1 {
			t.Fatalf("offset fetch v1 partition %d before the offsets topic: %+v, want NOT_COORDINATOR", p, f)
		}
	}
	if len(parts) != 2 {
		t.Fatalf("offset fetch v1 answered %d partitions, want 2", len(parts))
	}
	code, _ = offsetFetchRaw(t, tb, 5, "early", 2)
	wantCode(t, "offset fetch v5 before the offsets topic", code, kerr.NotCoordinator)

	// The first lookup creates the topic and answers COORDINATOR_NOT_AVAILABLE.
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.SetVersion(4)
	find.CoordinatorKeys = []string{"early", "other"}
	first := tb.roundTrip(find).(*kmsg.FindCoordinatorResponse)
	for _, c := range first.Coordinators {
		wantCode(t, "first lookup of "+c.Key, c.ErrorCode, kerr.CoordinatorNotAvailable)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp := tb.roundTrip(find).(*kmsg.FindCoordinatorResponse)
		ok := len(resp.Coordinators) == 2
		for _, c := range resp.Coordinators {
			ok = ok && c.ErrorCode == 0 && c.NodeID == 0 && net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))) == tb.addr
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("coordinator lookup never succeeded: %+v", resp.Coordinators)
		}
	}
	readyCoordinator(t, tb, "early")
	wantCodes(t, "commit once coordinated", commitRaw(t, tb, 8, "early", "", nil, -1, "", 1), 1, noError)
}

func TestJoinGroupErrorCodes(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("t", 2, nil)
	readyCoordinator(t, tb, "join-v4")

	t.Run("MEMBER_ID_REQUIRED from v4", func(t *testing.T) {
		first := mustJoin(t, tb, 4, "join-v4", "", nil)
		wantCode(t, "first v4 join", first.ErrorCode, kerr.MemberIDRequired)
		if !strings.HasPrefix(first.MemberID, "test-") {
			t.Fatalf("member id %q is not derived from the client id", first.MemberID)
		}
		second := mustJoin(t, tb, 4, "join-v4", first.MemberID, nil)
		wantCode(t, "v4 join with the given id", second.ErrorCode, noError)
		if second.MemberID != first.MemberID || second.LeaderID != first.MemberID || second.Generation != 1 {
			t.Fatalf("v4 join: member %q leader %q generation %d", second.MemberID, second.LeaderID, second.Generation)
		}
	})
	t.Run("v0 joins and heartbeats", func(t *testing.T) {
		j := mustJoin(t, tb, 0, "join-v0", "", nil)
		wantCode(t, "v0 join", j.ErrorCode, noError)
		if j.MemberID == "" || j.Generation != 1 || j.LeaderID != j.MemberID {
			t.Fatalf("v0 join: member %q leader %q generation %d", j.MemberID, j.LeaderID, j.Generation)
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation = "join-v0", j.MemberID, j.Generation
		resp, err := rawRoundTrip(tb.addr, hb) // a v0 response is 6 bytes
		if err != nil {
			t.Fatal(err)
		}
		wantCode(t, "v0 heartbeat while completing the rebalance", resp.(*kmsg.HeartbeatResponse).ErrorCode, noError)
	})
	t.Run("v3 joins in one round trip", func(t *testing.T) {
		j := mustJoin(t, tb, 3, "join-v3", "", nil)
		wantCode(t, "v3 join", j.ErrorCode, noError)
		if j.MemberID == "" || j.Generation != 1 || j.LeaderID != j.MemberID || len(j.Members) != 1 {
			t.Fatalf("v3 join: member %q leader %q generation %d members %d", j.MemberID, j.LeaderID, j.Generation, len(j.Members))
		}
	})
	t.Run("INVALID_SESSION_TIMEOUT", func(t *testing.T) {
		for _, ms := range []int32{5999, 1_800_001} {
			resp, err := joinRaw(tb.addr, 5, "join-timeouts", "", nil, ms)
			if err != nil {
				t.Fatal(err)
			}
			wantCode(t, "session timeout "+strconv.Itoa(int(ms)), resp.ErrorCode, kerr.InvalidSessionTimeout)
		}
	})
	t.Run("INVALID_GROUP_ID", func(t *testing.T) {
		wantCode(t, "empty group id", mustJoin(t, tb, 5, "", "", nil).ErrorCode, kerr.InvalidGroupID)
	})
	t.Run("INCONSISTENT_GROUP_PROTOCOL", func(t *testing.T) {
		const group = "join-protocols"
		member, gen := joinMember(t, tb, group)
		other := func(protocolType, name string) int16 {
			req := kmsg.NewPtrJoinGroupRequest()
			req.SetVersion(5)
			req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = group, 10_000, 10_000, protocolType
			if name != "" {
				p := kmsg.NewJoinGroupRequestProtocol()
				p.Name, p.Metadata = name, []byte{}
				req.Protocols = append(req.Protocols, p)
			}
			return tb.roundTrip(req).(*kmsg.JoinGroupResponse).ErrorCode
		}
		wantCode(t, "other protocol type", other("connect", "range"), kerr.InconsistentGroupProtocol)
		wantCode(t, "no common protocol", other("consumer", "roundrobin"), kerr.InconsistentGroupProtocol)
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(5)
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = "join-no-protocols", 10_000, 10_000, "consumer"
		wantCode(t, "no protocols for a new group", tb.roundTrip(req).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)

		sync := kmsg.NewPtrSyncGroupRequest()
		sync.SetVersion(5)
		sync.Group, sync.MemberID, sync.Generation = group, member, gen
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("sticky")
		wantCode(t, "sync v5 naming another protocol", tb.roundTrip(sync).(*kmsg.SyncGroupResponse).ErrorCode, kerr.InconsistentGroupProtocol)
		// The member is unaffected by the rejected joins.
		wantCode(t, "heartbeat", heartbeatRaw(t, tb, 4, group, member, nil, gen), noError)
	})
}

func TestGroupMemberErrorCodes(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("t", 2, nil)
	readyCoordinator(t, tb, "members")

	t.Run("UNKNOWN_MEMBER_ID", func(t *testing.T) {
		const group = "members"
		wantCode(t, "join with an id to an unknown group", mustJoin(t, tb, 5, "nobody-here", "ghost", nil).ErrorCode, kerr.UnknownMemberID)
		member, gen := joinMember(t, tb, group)
		wantCode(t, "join with an unknown id", mustJoin(t, tb, 5, group, "ghost", nil).ErrorCode, kerr.UnknownMemberID)
		wantCode(t, "heartbeat of an unknown member", heartbeatRaw(t, tb, 4, group, "ghost", nil, gen), kerr.UnknownMemberID)
		wantCode(t, "sync of an unknown member", syncRaw(t, tb, 5, group, "ghost", nil, gen, nil).ErrorCode, kerr.UnknownMemberID)
		wantCodes(t, "commit of an unknown member", commitRaw(t, tb, 8, group, "ghost", nil, gen, "", 1), 1, kerr.UnknownMemberID)
		// Without a member id, only an empty group takes commits.
		wantCodes(t, "simple commit to a group with members", commitRaw(t, tb, 8, group, "", nil, -1, "", 1), 1, kerr.UnknownMemberID)
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.SetVersion(4)
		leave.Group = group
		for _, id := range []string{"ghost", member} {
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = id
			leave.Members = append(leave.Members, m)
		}
		lr := tb.roundTrip(leave).(*kmsg.LeaveGroupResponse)
		wantCode(t, "leave", lr.ErrorCode, noError)
		wantCode(t, "leave of an unknown member", lr.Members[0].ErrorCode, kerr.UnknownMemberID)
		wantCode(t, "leave of the member", lr.Members[1].ErrorCode, noError)
		wantCode(t, "heartbeat after leaving", heartbeatRaw(t, tb, 4, group, member, nil, gen), kerr.UnknownMemberID)
	})
	t.Run("ILLEGAL_GENERATION", func(t *testing.T) {
		const group = "generations"
		member, gen := joinMember(t, tb, group)
		wantCode(t, "heartbeat of another generation", heartbeatRaw(t, tb, 4, group, member, nil, gen+6), kerr.IllegalGeneration)
		wantCode(t, "sync of another generation", syncRaw(t, tb, 5, group, member, nil, gen+6, nil).ErrorCode, kerr.IllegalGeneration)
		wantCodes(t, "commit of another generation", commitRaw(t, tb, 8, group, member, nil, gen+6, "", 1, 2), 2, kerr.IllegalGeneration)
		// Before OffsetCommit v9, a member's commit to a group the
		// coordinator does not know is from a stale generation.
		wantCodes(t, "member commit to an unknown group", commitRaw(t, tb, 8, "never-joined", member, nil, 1, "", 1), 1, kerr.IllegalGeneration)
		wantCodes(t, "commit of the current generation", commitRaw(t, tb, 8, group, member, nil, gen, "", 1, 2), 2, noError)
	})
	t.Run("REBALANCE_IN_PROGRESS", func(t *testing.T) {
		const group = "rebalancing"
		first, gen := joinMember(t, tb, group)
		type joined struct {
			resp *kmsg.JoinGroupResponse
			err  error
		}
		second := make(chan joined, 1)
		go func() {
			resp, err := joinRaw(tb.addr, 3, group, "", nil, 10_000)
			second <- joined{resp, err}
		}()
		// The second member's join puts the group into PreparingRebalance;
		// the first learns it from its heartbeat.
		awaitRebalance(t, tb, group, first, gen)
		wantCode(t, "sync while preparing a rebalance", syncRaw(t, tb, 5, group, first, nil, gen, nil).ErrorCode, kerr.RebalanceInProgress)
		// Commits of the current generation are still taken while
		// preparing: the member may not have heard of the rebalance.
		wantCodes(t, "commit while preparing a rebalance", commitRaw(t, tb, 8, group, first, nil, gen, "", 3), 1, noError)

		rejoin := mustJoin(t, tb, 5, group, first, nil)
		wantCode(t, "first member's rejoin", rejoin.ErrorCode, noError)
		j := <-second
		if j.err != nil {
			t.Fatal(j.err)
		}
		wantCode(t, "second member's join", j.resp.ErrorCode, noError)
		next := rejoin.Generation
		if next != gen+1 || j.resp.Generation != next || rejoin.LeaderID != first || len(rejoin.Members) != 2 {
			t.Fatalf("rebalance: generations %d and %d (want %d), leader %q (want %q), %d members", next, j.resp.Generation, gen+1, rejoin.LeaderID, first, len(rejoin.Members))
		}
		// Joined but not synced: the group waits for the leader's assignment.
		wantCodes(t, "commit while completing the rebalance", commitRaw(t, tb, 8, group, first, nil, next, "", 4), 1, kerr.RebalanceInProgress)
		wantCodes(t, "commit of the old generation", commitRaw(t, tb, 8, group, first, nil, gen, "", 4), 1, kerr.IllegalGeneration)
		describe := kmsg.NewPtrDescribeGroupsRequest()
		describe.Groups = []string{group}
		dg := tb.roundTrip(describe).(*kmsg.DescribeGroupsResponse).Groups[0]
		if dg.State != "CompletingRebalance" || len(dg.Members) != 2 || dg.Protocol != "" || len(dg.Members[0].MemberAssignment) != 0 {
			t.Fatalf("described while completing the rebalance: %+v", dg)
		}
		// The follower's SyncGroup waits for the leader's assignment.
		followerSync := make(chan *kmsg.SyncGroupResponse, 1)
		go func() {
			req := kmsg.NewPtrSyncGroupRequest()
			req.SetVersion(5)
			req.Group, req.MemberID, req.Generation = group, j.resp.MemberID, next
			resp, _ := rawRoundTrip(tb.addr, req)
			s, _ := resp.(*kmsg.SyncGroupResponse)
			followerSync <- s
		}()
		wantCode(t, "heartbeat while completing the rebalance", heartbeatRaw(t, tb, 4, group, first, nil, next), noError)
		s := syncRaw(t, tb, 5, group, first, nil, next, map[string][]byte{first: []byte("a"), j.resp.MemberID: []byte("b")})
		wantCode(t, "leader's sync", s.ErrorCode, noError)
		if string(s.MemberAssignment) != "a" || s.Protocol == nil || *s.Protocol != "range" {
			t.Fatalf("leader got assignment %q protocol %v, want %q and range", s.MemberAssignment, s.Protocol, "a")
		}
		s = <-followerSync
		if s == nil {
			t.Fatal("follower's sync failed")
		}
		wantCode(t, "follower's sync", s.ErrorCode, noError)
		if string(s.MemberAssignment) != "b" {
			t.Fatalf("follower got assignment %q, want %q", s.MemberAssignment, "b")
		}
		wantCodes(t, "commit once stable", commitRaw(t, tb, 8, group, j.resp.MemberID, nil, next, "", 4), 1, noError)
	})
	t.Run("FENCED_INSTANCE_ID", func(t *testing.T) {
		const group = "static"
		instance := kmsg.StringPtr("instance-1")
		j := mustJoin(t, tb, 5, group, "", instance)
		wantCode(t, "static join", j.ErrorCode, noError)
		wantCode(t, "static sync", syncRaw(t, tb, 5, group, j.MemberID, instance, j.Generation, map[string][]byte{j.MemberID: {}}).ErrorCode, noError)
		// The same instance restarts: a new member id, no rebalance.
		again := mustJoin(t, tb, 5, group, "", instance)
		wantCode(t, "static rejoin", again.ErrorCode, noError)
		if again.MemberID == j.MemberID || again.Generation != j.Generation {
			t.Fatalf("static rejoin: member %q (old %q), generation %d (old %d)", again.MemberID, j.MemberID, again.Generation, j.Generation)
		}
		wantCode(t, "heartbeat of the replaced member", heartbeatRaw(t, tb, 4, group, j.MemberID, instance, j.Generation), kerr.FencedInstanceID)
		wantCodes(t, "commit of the replaced member", commitRaw(t, tb, 8, group, j.MemberID, instance, j.Generation, "", 1), 1, kerr.FencedInstanceID)
		wantCode(t, "sync of the replaced member", syncRaw(t, tb, 5, group, j.MemberID, instance, j.Generation, nil).ErrorCode, kerr.FencedInstanceID)
		wantCode(t, "heartbeat of the new member", heartbeatRaw(t, tb, 4, group, again.MemberID, instance, j.Generation), noError)
		wantCode(t, "heartbeat of an unknown instance", heartbeatRaw(t, tb, 4, group, again.MemberID, kmsg.StringPtr("instance-2"), j.Generation), kerr.UnknownMemberID)

		// LeaveGroup v3+ fences the old member id and removes a static
		// member by instance id alone, as administrators do.
		leave := kmsg.NewPtrLeaveGroupRequest()
		leave.SetVersion(3)
		leave.Group = group
		for _, id := range []string{j.MemberID, ""} {
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID, m.InstanceID = id, instance
			leave.Members = append(leave.Members, m)
		}
		lr := tb.roundTrip(leave).(*kmsg.LeaveGroupResponse)
		wantCode(t, "leave", lr.ErrorCode, noError)
		wantCode(t, "leave of the replaced member id", lr.Members[0].ErrorCode, kerr.FencedInstanceID)
		wantCode(t, "leave by instance id", lr.Members[1].ErrorCode, noError)
		wantCode(t, "heartbeat after removal by instance id", heartbeatRaw(t, tb, 4, group, again.MemberID, instance, j.Generation), kerr.UnknownMemberID)
	})
}

func TestGroupMaxSize(t *testing.T) {
	tb := startBroker(t, map[string]string{"group.max.size": "1"})
	tb.createTopic("t", 2, nil)
	readyCoordinator(t, tb, "small")
	member, gen := joinMember(t, tb, "small")
	for _, version := range []int16{3, 4, 9} {
		j := mustJoin(t, tb, version, "small", "", nil)
		wantCode(t, "join v"+strconv.Itoa(int(version))+" of a second member", j.ErrorCode, kerr.GroupMaxSizeReached)
	}
	// The member already in is untouched.
	wantCode(t, "heartbeat of the member", heartbeatRaw(t, tb, 4, "small", member, nil, gen), noError)
}

func TestDeleteGroupsErrorCodes(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("t", 2, nil)
	readyCoordinator(t, tb, "deletable")
	member, gen := joinMember(t, tb, "deletable")
	wantCodes(t, "commit", commitRaw(t, tb, 8, "deletable", member, nil, gen, "", 10), 1, noError)
	del := func(groups ...string) []int16 {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.SetVersion(2)
		req.Groups = groups
		var codes []int16
		for _, g := range tb.roundTrip(req).(*kmsg.DeleteGroupsResponse).Groups {
			codes = append(codes, g.ErrorCode)
		}
		return codes
	}
	codes := del("deletable", "never-existed")
	wantCode(t, "delete a group with a member", codes[0], kerr.NonEmptyGroup)
	wantCode(t, "delete an unknown group", codes[1], kerr.GroupIDNotFound)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.SetVersion(0)
	leave.Group, leave.MemberID = "deletable", member
	lr, err := rawRoundTrip(tb.addr, leave)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, "leave v0", lr.(*kmsg.LeaveGroupResponse).ErrorCode, noError)
	wantCode(t, "delete the empty group", del("deletable")[0], noError)
	wantCode(t, "delete it again", del("deletable")[0], kerr.GroupIDNotFound)
	// Its offsets went with it.
	if o := fetchCommitted(t, tb, "deletable", "t", 1)[0]; o.Offset != -1 {
		t.Fatalf("offset %d survived the group's deletion", o.Offset)
	}

	// DescribeGroups up to v5 reports an unknown group as Dead, without
	// error (GROUP_ID_NOT_FOUND is v6+, not served).
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.SetVersion(5)
	describe.Groups = []string{"deletable"}
	dg := tb.roundTrip(describe).(*kmsg.DescribeGroupsResponse).Groups[0]
	wantCode(t, "describe a deleted group", dg.ErrorCode, noError)
	if dg.State != "Dead" || len(dg.Members) != 0 {
		t.Fatalf("deleted group described as %s with %d members, want Dead", dg.State, len(dg.Members))
	}
}

func TestOffsetDeleteErrorCodes(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("t", 2, nil)
	readyCoordinator(t, tb, "subscribed")
	member, gen := joinMember(t, tb, "subscribed") // joinRaw subscribes to topic "t"
	wantCodes(t, "commit", commitRaw(t, tb, 8, "subscribed", member, nil, gen, "", 10, 20), 2, noError)
	offsetDelete := func(group string) *kmsg.OffsetDeleteResponse {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetDeleteRequestTopicPartition()
		rp.Partition = 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return tb.roundTrip(req).(*kmsg.OffsetDeleteResponse)
	}
	wantCode(t, "offset delete of an unknown group", offsetDelete("unknown").ErrorCode, kerr.GroupIDNotFound)
	resp := offsetDelete("subscribed")
	wantCode(t, "offset delete", resp.ErrorCode, noError)
	wantCode(t, "offset delete of a subscribed topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.SetVersion(3)
	leave.Group = "subscribed"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = member
	leave.Members = append(leave.Members, lm)
	wantCode(t, "leave", tb.roundTrip(leave).(*kmsg.LeaveGroupResponse).Members[0].ErrorCode, noError)
	resp = offsetDelete("subscribed")
	wantCode(t, "offset delete of an empty group", resp.ErrorCode, noError)
	wantCode(t, "offset delete of partition 0", resp.Topics[0].Partitions[0].ErrorCode, noError)
	got := fetchCommitted(t, tb, "subscribed", "t", 2)
	if got[0].Offset != -1 || got[1].Offset != 20 {
		t.Fatalf("after deleting partition 0's offset: %d and %d, want -1 and 20", got[0].Offset, got[1].Offset)
	}
}
