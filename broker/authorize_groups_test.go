package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

// Each group API refuses a principal without the group ACL Kafka checks
// with GROUP_AUTHORIZATION_FAILED, and lets it through with the ACL.
func TestAuthorizeGroupAPIs(t *testing.T) {
	ab := startACLBroker(t, nil)
	ab.createTopic("gt", 1, nil)
	cases := []struct {
		api  string
		op   auth.Operation
		call func(group string) int16
	}{
		{"JoinGroup", auth.OpRead, func(g string) int16 {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Version = 3
			req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = g, 10000, 10000, "consumer"
			p := kmsg.NewJoinGroupRequestProtocol()
			p.Name = "range"
			req.Protocols = append(req.Protocols, p)
			return ab.roundTrip(req).(*kmsg.JoinGroupResponse).ErrorCode
		}},
		{"Heartbeat", auth.OpRead, func(g string) int16 {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.MemberID = g, "m"
			return ab.roundTrip(req).(*kmsg.HeartbeatResponse).ErrorCode
		}},
		{"SyncGroup", auth.OpRead, func(g string) int16 {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.MemberID = g, "m"
			return ab.roundTrip(req).(*kmsg.SyncGroupResponse).ErrorCode
		}},
		{"LeaveGroup", auth.OpRead, func(g string) int16 {
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Group, req.MemberID = g, "m"
			return ab.roundTrip(req).(*kmsg.LeaveGroupResponse).ErrorCode
		}},
		{"FindCoordinator", auth.OpDescribe, func(g string) int16 {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey = g
			return ab.roundTrip(req).(*kmsg.FindCoordinatorResponse).ErrorCode
		}},
		{"DescribeGroups", auth.OpDescribe, func(g string) int16 {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Groups = []string{g}
			return ab.roundTrip(req).(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode
		}},
		{"DeleteGroups", auth.OpDelete, func(g string) int16 {
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Groups = []string{g}
			return ab.roundTrip(req).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode
		}},
		{"OffsetFetch", auth.OpDescribe, func(g string) int16 {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Version = 5
			req.Group = g
			return ab.roundTrip(req).(*kmsg.OffsetFetchResponse).ErrorCode
		}},
		{"OffsetDelete", auth.OpDelete, func(g string) int16 {
			req := kmsg.NewPtrOffsetDeleteRequest()
			req.Group = g
			return ab.roundTrip(req).(*kmsg.OffsetDeleteResponse).ErrorCode
		}},
	}
	for _, c := range cases {
		t.Run(c.api, func(t *testing.T) {
			group := "g-" + c.api
			ab.asUser("alice")
			if code := c.call(group); code != kerr.GroupAuthorizationFailed.Code {
				t.Fatalf("without acl: code %d (%v)", code, kerr.ErrorForCode(code))
			}
			ab.addACL(auth.ResourceGroup, auth.PatternPrefixed, group, "User:alice", c.op, auth.PermAllow)
			if code := c.call(group); code == kerr.GroupAuthorizationFailed.Code {
				t.Fatalf("with %v on the group: still refused", c.op)
			}
			ab.addACL(auth.ResourceGroup, auth.PatternLiteral, group, "User:alice", c.op, auth.PermDeny)
			if code := c.call(group); code != kerr.GroupAuthorizationFailed.Code {
				t.Fatalf("deny over allow: code %d", code)
			}
		})
	}

	// OffsetCommit needs READ on the group, then READ on the topic.
	commit := func() int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 2
		req.Group, req.Generation = "committer", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "gt"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return ab.roundTrip(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	ab.asUser("bob")
	if code := commit(); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("commit without acls: %d", code)
	}
	ab.allow(auth.ResourceGroup, "committer", "bob", auth.OpRead)
	if code := commit(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("commit without topic READ: %d", code)
	}
	ab.allow(auth.ResourceTopic, "gt", "bob", auth.OpRead)
	if code := commit(); code != 0 {
		t.Fatalf("commit with both: %d", code)
	}
	// Listing groups shows only the describable ones to bob.
	ab.allow(auth.ResourceGroup, "committer", "bob", auth.OpDescribe)
	lg := ab.roundTrip(kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
	for _, g := range lg.Groups {
		if g.Group != "committer" {
			t.Fatalf("bob lists group %s", g.Group)
		}
	}
	if len(lg.Groups) != 1 {
		t.Fatalf("bob lists %d groups", len(lg.Groups))
	}
}
