package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetFetchRaw fetches partitions 0..n-1 of topic "t" for group at a
// pinned version (nil topics from v2: every committed offset) and returns
// the top-level code and the partitions by number.
func offsetFetchRaw(t *testing.T, tb *testBroker, version int16, group string, n int32) (int16, map[int32]kmsg.OffsetFetchResponseTopicPartition) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(version)
	if version >= 8 {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = group
		if n > 0 {
			rt := kmsg.NewOffsetFetchRequestGroupTopic()
			rt.Topic = "t"
			for p := range n {
				rt.Partitions = append(rt.Partitions, p)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		req.Groups = append(req.Groups, rg)
	} else {
		req.Group = group
		if n > 0 {
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic = "t"
			for p := range n {
				rt.Partitions = append(rt.Partitions, p)
			}
			req.Topics = append(req.Topics, rt)
		}
	}
	resp := tb.roundTrip(req).(*kmsg.OffsetFetchResponse)
	out := map[int32]kmsg.OffsetFetchResponseTopicPartition{}
	if version >= 8 {
		g := resp.Groups[0]
		for _, ft := range g.Topics {
			for _, fp := range ft.Partitions {
				out[fp.Partition] = kmsg.OffsetFetchResponseTopicPartition{Partition: fp.Partition, Offset: fp.Offset, LeaderEpoch: fp.LeaderEpoch, Metadata: fp.Metadata, ErrorCode: fp.ErrorCode}
			}
		}
		return g.ErrorCode, out
	}
	for _, ft := range resp.Topics {
		if ft.Topic != "t" {
			t.Fatalf("offset fetch v%d answered topic %q", version, ft.Topic)
		}
		for _, fp := range ft.Partitions {
			out[fp.Partition] = fp
		}
	}
	return resp.ErrorCode, out
}

// TestSimpleConsumerCommits covers commits without group management
// (generation -1): they create the group, round-trip offset, leader epoch
// and metadata through OffsetFetch at every version, survive a restart, and
// leave a group that consumers can still join.
func TestSimpleConsumerCommits(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("t", 2, nil)
	readyCoordinator(t, tb, "simple")

	code, fetched := offsetFetchRaw(t, tb, 5, "simple", 2)
	wantCode(t, "fetch before any commit", code, noError)
	for p, f := range fetched {
		if f.Offset != -1 || f.LeaderEpoch != -1 || f.ErrorCode != 0 {
			t.Fatalf("partition %d of an unknown group: %+v, want offset -1", p, f)
		}
	}

	wantCodes(t, "simple commit v8", commitRaw(t, tb, 8, "simple", "", nil, -1, "checkpoint", 42, 7), 2, noError)
	// Any member id is accepted while the group is empty, as admin tools send.
	wantCodes(t, "simple commit with a member id", commitRaw(t, tb, 8, "simple-admin", "admin", nil, -1, "", 3), 1, noError)
	wantCodes(t, "simple commit v2", commitRaw(t, tb, 2, "simple-v2", "", nil, -1, "old", 9), 1, noError)
	long := strings.Repeat("x", 4096)
	wantCodes(t, "metadata of 4096 characters", commitRaw(t, tb, 8, "simple-meta", "", nil, -1, long, 1), 1, noError)
	wantCodes(t, "metadata over offset.metadata.max.bytes", commitRaw(t, tb, 8, "simple-meta", "", nil, -1, long+"x", 2), 1, kerr.OffsetMetadataTooLarge)

	check := func(when string) {
		t.Helper()
		for _, version := range []int16{1, 3, 5, 8} {
			code, got := offsetFetchRaw(t, tb, version, "simple", 2)
			wantCode(t, when+": fetch", code, noError)
			wantEpoch := int32(5) // commitRaw sends leader epoch 5; fetch v5+ returns it
			if version < 5 {
				wantEpoch = -1
			}
			for p, want := range []int64{42, 7} {
				f := got[int32(p)]
				if f.ErrorCode != 0 || f.Offset != want || f.Metadata == nil || *f.Metadata != "checkpoint" || (version >= 5 && f.LeaderEpoch != wantEpoch) {
					t.Fatalf("%s: fetch v%d partition %d: %+v, want offset %d epoch %d metadata %q", when, version, p, f, want, wantEpoch, "checkpoint")
				}
			}
		}
		// From v2, no topics means every committed offset.
		_, all := offsetFetchRaw(t, tb, 8, "simple", 0)
		if len(all) != 2 || all[0].Offset != 42 || all[1].Offset != 7 {
			t.Fatalf("%s: fetch of all offsets: %+v", when, all)
		}
		if _, got := offsetFetchRaw(t, tb, 8, "simple-meta", 1); got[0].Offset != 1 || *got[0].Metadata != long {
			t.Fatalf("%s: the commit with the longest metadata allowed reads back as offset %d", when, got[0].Offset)
		}
		if _, got := offsetFetchRaw(t, tb, 3, "simple-v2", 1); got[0].Offset != 9 || *got[0].Metadata != "old" {
			t.Fatalf("%s: the v2 commit reads back as %+v", when, got[0])
		}
	}
	check("after commit")

	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.Groups = []string{"simple"}
	dg := tb.roundTrip(describe).(*kmsg.DescribeGroupsResponse).Groups[0]
	if dg.ErrorCode != 0 || dg.State != "Empty" || dg.ProtocolType != "" || len(dg.Members) != 0 {
		t.Fatalf("simple group described as %+v, want Empty without protocol type", dg)
	}
	list := kmsg.NewPtrListGroupsRequest()
	list.SetVersion(4)
	listed := false
	for _, g := range tb.roundTrip(list).(*kmsg.ListGroupsResponse).Groups {
		if g.Group == "simple" {
			listed = g.GroupState == "Empty" && g.ProtocolType == ""
		}
	}
	if !listed {
		t.Fatal("ListGroups does not list the simple group as Empty")
	}

	tb.restart()
	readyCoordinator(t, tb, "simple")
	check("after restart")

	// A consumer joins the group that simple commits created, and its
	// commits replace theirs.
	member, gen := joinMember(t, tb, "simple")
	wantCodes(t, "member commit", commitRaw(t, tb, 8, "simple", member, nil, gen, "member", 50, 60), 2, noError)
	if _, got := offsetFetchRaw(t, tb, 8, "simple", 2); got[0].Offset != 50 || got[1].Offset != 60 || *got[0].Metadata != "member" {
		t.Fatalf("after the member's commit: %+v", got)
	}
}
