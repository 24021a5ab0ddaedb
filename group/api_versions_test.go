package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestResponsesEncodeAtEveryVersion runs each API at every version kmsg
// knows (OffsetCommit and OffsetFetch up to v9, before topic ids) and
// checks that the response encodes and decodes at the request's version.
func TestResponsesEncodeAtEveryVersion(t *testing.T) {
	e := newEnv(t)
	member, gen := e.stable("g", nil)
	e.commit(8, "g", member, gen, "t", 0, 5, "meta")

	roundTrip := func(name string, v int16, resp kmsg.Response) {
		t.Helper()
		if resp.GetVersion() != v {
			t.Fatalf("%s v%d: response version %d", name, v, resp.GetVersion())
		}
		b := resp.AppendTo(nil)
		back := resp.RequestKind().ResponseKind()
		back.SetVersion(v)
		if err := back.ReadFrom(b); err != nil {
			t.Fatalf("%s v%d: response does not decode: %v", name, v, err)
		}
	}
	maxV := func(r kmsg.Request, limit int16) int16 { return min(r.MaxVersion(), limit) }

	for v := int16(0); v <= maxV(new(kmsg.HeartbeatRequest), 99); v++ {
		roundTrip("Heartbeat", v, e.c.Heartbeat(e.ctx, &kmsg.HeartbeatRequest{Version: v, Group: "g", MemberID: member, Generation: gen}))
	}
	for v := int16(0); v <= maxV(new(kmsg.JoinGroupRequest), 99); v++ {
		r := e.join(v, "other", "", nil)
		roundTrip("JoinGroup", v, r)
		if r.ErrorCode == 0 {
			e.c.LeaveGroup(e.ctx, &kmsg.LeaveGroupRequest{Version: 3, Group: "other", Members: []kmsg.LeaveGroupRequestMember{{MemberID: r.MemberID}}})
		}
	}
	for v := int16(0); v <= maxV(new(kmsg.SyncGroupRequest), 99); v++ {
		roundTrip("SyncGroup", v, e.sync(v, "g", member, gen, nil, nil))
	}
	for v := int16(0); v <= maxV(new(kmsg.OffsetCommitRequest), 9); v++ {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = v, "g", member, gen
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 3, LeaderEpoch: -1}}}}
		roundTrip("OffsetCommit", v, e.c.OffsetCommit(e.ctx, req))
	}
	for v := int16(0); v <= maxV(new(kmsg.OffsetFetchRequest), 9); v++ {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = v, "g"
		req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}}
		if v < 2 {
			req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0}}}
		}
		resp := e.c.OffsetFetch(e.ctx, req)
		roundTrip("OffsetFetch", v, resp)
		var offset int64
		if v >= 8 {
			offset = resp.Groups[0].Topics[0].Partitions[0].Offset
		} else {
			offset = resp.Topics[0].Partitions[0].Offset
		}
		if offset != 5 {
			t.Fatalf("OffsetFetch v%d: offset %d, want 5", v, offset)
		}
	}
	for v := int16(0); v <= maxV(new(kmsg.DescribeGroupsRequest), 99); v++ {
		roundTrip("DescribeGroups", v, e.c.DescribeGroups(e.ctx, &kmsg.DescribeGroupsRequest{Version: v, Groups: []string{"g", "nope"}}))
	}
	for v := int16(0); v <= maxV(new(kmsg.ListGroupsRequest), 99); v++ {
		roundTrip("ListGroups", v, e.c.ListGroups(e.ctx, &kmsg.ListGroupsRequest{Version: v}))
	}
	for v := int16(0); v <= maxV(new(kmsg.OffsetDeleteRequest), 99); v++ {
		req := &kmsg.OffsetDeleteRequest{Version: v, Group: "g", Topics: []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}}
		roundTrip("OffsetDelete", v, e.c.OffsetDelete(e.ctx, req))
	}
	for v := int16(0); v <= maxV(new(kmsg.LeaveGroupRequest), 99); v++ {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group, req.MemberID = v, "g", "ghost"
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "ghost"}}
		roundTrip("LeaveGroup", v, e.c.LeaveGroup(e.ctx, req))
	}
	for v := int16(0); v <= maxV(new(kmsg.DeleteGroupsRequest), 99); v++ {
		roundTrip("DeleteGroups", v, e.c.DeleteGroups(e.ctx, &kmsg.DeleteGroupsRequest{Version: v, Groups: []string{"g"}}))
	}
}
