package group

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestLeaveGroupVersions(t *testing.T) {
	e := newEnv(t)
	member, _ := e.stable("g", nil)
	old := e.c.LeaveGroup(e.ctx, &kmsg.LeaveGroupRequest{Version: 1, Group: "g", MemberID: "ghost"})
	wantCode(t, "v1 unknown member", old.ErrorCode, kerr.UnknownMemberID)
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 3, "g"
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member}, {MemberID: "ghost"}}
	resp := e.c.LeaveGroup(e.ctx, req)
	if resp.ErrorCode != 0 || len(resp.Members) != 2 || resp.Members[0].ErrorCode != 0 || resp.Members[1].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("v3 leave %+v", resp)
	}
	if s := groupState(e, "g"); s != "Empty" {
		t.Fatalf("state %s", s)
	}
}

func TestListGroupsFilters(t *testing.T) {
	e := newEnv(t)
	e.stable("stable", nil)
	wantCode(t, "commit", e.commit(8, "empty", "", -1, "t", 0, 1, ""), nil)
	cases := []struct {
		version int16
		states  []string
		want    []string
	}{
		{3, []string{"Stable"}, []string{"empty", "stable"}}, // no filter before v4
		{4, nil, []string{"empty", "stable"}},
		{4, []string{"stable"}, []string{"stable"}},
		{4, []string{"Empty", "Dead"}, []string{"empty"}},
	}
	for _, tc := range cases {
		resp := e.c.ListGroups(e.ctx, &kmsg.ListGroupsRequest{Version: tc.version, StatesFilter: tc.states})
		var got []string
		for _, g := range resp.Groups {
			got = append(got, g.Group)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("v%d %v: %v, want %v", tc.version, tc.states, got, tc.want)
		}
	}
}

func TestDescribeUnknownGroupByVersion(t *testing.T) {
	e := newEnv(t)
	for _, v := range []int16{5, 6} {
		resp := e.c.DescribeGroups(e.ctx, &kmsg.DescribeGroupsRequest{Version: v, Groups: []string{"nope"}})
		g := resp.Groups[0]
		want := int16(0)
		if v >= 6 {
			want = kerr.GroupIDNotFound.Code
		}
		if g.ErrorCode != want || g.State != "Dead" {
			t.Errorf("v%d: %+v", v, g)
		}
	}
}

func TestCommitFailsWhenAppendFails(t *testing.T) {
	e := newEnv(t)
	e.p.mu.Lock()
	e.p.failErr = kerr.NotEnoughReplicas
	e.p.mu.Unlock()
	wantCode(t, "commit", e.commit(8, "g", "", -1, "t", 0, 1, ""), kerr.CoordinatorNotAvailable)
	if _, topics := e.fetch("g"); len(topics) != 0 {
		t.Fatalf("failed commit visible: %+v", topics)
	}
}

func TestEmptyGroupID(t *testing.T) {
	e := newEnv(t)
	// Group management needs a group id...
	wantCode(t, "join", e.join(5, "", "", nil).ErrorCode, kerr.InvalidGroupID)
	wantCode(t, "sync", e.sync(5, "", "m", 1, nil, nil).ErrorCode, kerr.InvalidGroupID)
	wantCode(t, "heartbeat", e.c.Heartbeat(e.ctx, &kmsg.HeartbeatRequest{Version: 4}).ErrorCode, kerr.InvalidGroupID)
	wantCode(t, "leave", e.c.LeaveGroup(e.ctx, &kmsg.LeaveGroupRequest{Version: 4}).ErrorCode, kerr.InvalidGroupID)
	wantCode(t, "offset delete", e.c.OffsetDelete(e.ctx, &kmsg.OffsetDeleteRequest{}).ErrorCode, kerr.InvalidGroupID)
	// ...but offsets of the empty group id are allowed, for old clients.
	wantCode(t, "commit", e.commit(8, "", "", -1, "t", 0, 4, ""), nil)
	if _, topics := e.fetch(""); len(topics) != 1 || topics[0].Partitions[0].Offset != 4 {
		t.Fatalf("fetch of the empty group id: %+v", topics)
	}
}
