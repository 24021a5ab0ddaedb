package broker

import (
	"cmp"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

// The transaction and inter-broker APIs: refused with Kafka's code
// without the ACL, let through (some other code or none) with it.
func TestAuthorizeTxnAndInterBrokerAPIs(t *testing.T) {
	ab := startACLBroker(t, nil)
	ab.createTopic("tt", 1, nil)
	cases := []struct {
		name string
		acls []aclRule
		want *kerr.Error
		call func() int16
		user string // "" means alice
	}{
		{"InitProducerId transactional", []aclRule{{auth.ResourceTransactionalID, auth.PatternLiteral, "tx", "alice", auth.OpWrite, auth.PermAllow}},
			kerr.TransactionalIDAuthorizationFailed, func() int16 {
				req := kmsg.NewPtrInitProducerIDRequest()
				id := "tx"
				req.TransactionalID, req.TransactionTimeoutMillis = &id, 10000
				return ab.roundTrip(req).(*kmsg.InitProducerIDResponse).ErrorCode
			}, ""},
		{"InitProducerId idempotent by cluster", []aclRule{{auth.ResourceCluster, auth.PatternLiteral, auth.ClusterName, "alice", auth.OpIdempotentWrite, auth.PermAllow}},
			kerr.ClusterAuthorizationFailed, func() int16 {
				return ab.roundTrip(kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse).ErrorCode
			}, ""},
		{"InitProducerId idempotent by topic write", []aclRule{{auth.ResourceTopic, auth.PatternPrefixed, "t", "alice", auth.OpWrite, auth.PermAllow}},
			kerr.ClusterAuthorizationFailed, func() int16 {
				return ab.roundTrip(kmsg.NewPtrInitProducerIDRequest()).(*kmsg.InitProducerIDResponse).ErrorCode
			}, ""},
		{"EndTxn", []aclRule{{auth.ResourceTransactionalID, auth.PatternLiteral, "tx2", "alice", auth.OpWrite, auth.PermAllow}},
			kerr.TransactionalIDAuthorizationFailed, func() int16 {
				req := kmsg.NewPtrEndTxnRequest()
				req.TransactionalID, req.ProducerID = "tx2", 1
				return ab.roundTrip(req).(*kmsg.EndTxnResponse).ErrorCode
			}, ""},
		{"AddOffsetsToTxn group", []aclRule{{auth.ResourceTransactionalID, auth.PatternLiteral, "tx3", "alice", auth.OpWrite, auth.PermAllow}},
			kerr.TransactionalIDAuthorizationFailed, func() int16 {
				req := kmsg.NewPtrAddOffsetsToTxnRequest()
				req.TransactionalID, req.ProducerID, req.Group = "tx3", 1, "g"
				return ab.roundTrip(req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode
			}, ""},
		{"ControlledShutdown", []aclRule{{auth.ResourceCluster, auth.PatternLiteral, auth.ClusterName, "alice", auth.OpClusterAction, auth.PermAllow}},
			kerr.ClusterAuthorizationFailed, func() int16 {
				req := kmsg.NewPtrControlledShutdownRequest()
				req.Version, req.BrokerID, req.BrokerEpoch = 3, 99, -1
				return ab.roundTrip(req).(*kmsg.ControlledShutdownResponse).ErrorCode
			}, ""},
		{"WriteTxnMarkers", []aclRule{{auth.ResourceCluster, auth.PatternLiteral, auth.ClusterName, "*", auth.OpClusterAction, auth.PermAllow}},
			kerr.ClusterAuthorizationFailed, func() int16 {
				req := kmsg.NewPtrWriteTxnMarkersRequest()
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID, m.ProducerEpoch = 1, 0
				mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				mt.Topic, mt.Partitions = "nope", []int32{0}
				m.Topics = append(m.Topics, mt)
				req.Markers = append(req.Markers, m)
				return ab.roundTrip(req).(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
			}, "carol"},
		{"ListPartitionReassignments", []aclRule{{auth.ResourceCluster, auth.PatternLiteral, auth.ClusterName, "dave", auth.OpDescribe, auth.PermAllow}},
			kerr.ClusterAuthorizationFailed, func() int16 {
				return ab.roundTrip(kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse).ErrorCode
			}, "dave"},
		{"ElectLeaders", []aclRule{{auth.ResourceCluster, auth.PatternLiteral, auth.ClusterName, "erin", auth.OpAlter, auth.PermAllow}},
			kerr.ClusterAuthorizationFailed, func() int16 {
				req := kmsg.NewPtrElectLeadersRequest()
				req.Version = 2
				return ab.roundTrip(req).(*kmsg.ElectLeadersResponse).ErrorCode
			}, "erin"},
		{"DescribeTransactions", []aclRule{{auth.ResourceTransactionalID, auth.PatternLiteral, "tx9", "frank", auth.OpDescribe, auth.PermAllow}},
			kerr.TransactionalIDAuthorizationFailed, func() int16 {
				req := kmsg.NewPtrDescribeTransactionsRequest()
				req.TransactionalIDs = []string{"tx9"}
				return ab.roundTrip(req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
			}, "frank"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ab.asUser(cmp.Or(c.user, "alice"))
			if got := c.call(); got != c.want.Code {
				t.Fatalf("without acl: code %d (%v), want %s", got, kerr.ErrorForCode(got), c.want.Message)
			}
			for _, a := range c.acls {
				ab.addACL(a.typ, a.pat, a.name, "User:"+a.user, a.op, a.perm)
			}
			if got := c.call(); got == c.want.Code {
				t.Fatalf("with acl: still %s", c.want.Message)
			}
			for _, a := range c.acls {
				ab.addACL(a.typ, a.pat, a.name, "User:"+a.user, a.op, auth.PermDeny)
			}
			if got := c.call(); got != c.want.Code {
				t.Fatalf("deny over allow: code %d", got)
			}
		})
	}
}
