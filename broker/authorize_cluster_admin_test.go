package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

// The cluster-level admin APIs added beside the authorizer (log dir moves,
// SCRAM credentials, client quotas) refuse without Kafka's cluster
// operation and answer once it is granted.
func TestAuthorizeClusterAdminAPIs(t *testing.T) {
	ab := startACLBroker(t, nil)
	alterLogDirs := func() int16 {
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		d := kmsg.NewAlterReplicaLogDirsRequestDir()
		d.Dir = "/nowhere"
		dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		dt.Topic, dt.Partitions = "t", []int32{0}
		d.Topics = append(d.Topics, dt)
		req.Dirs = append(req.Dirs, d)
		return ab.roundTrip(req).(*kmsg.AlterReplicaLogDirsResponse).Topics[0].Partitions[0].ErrorCode
	}
	describeScram := func() int16 {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		return ab.roundTrip(req).(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode
	}
	alterScram := func() int16 {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = "nobody", 1
		req.Deletions = append(req.Deletions, d)
		resp := ab.roundTrip(req).(*kmsg.AlterUserSCRAMCredentialsResponse)
		if len(resp.Results) != 1 || resp.Results[0].User != "nobody" {
			t.Fatalf("alter SCRAM results %+v, want one for nobody", resp.Results)
		}
		return resp.Results[0].ErrorCode
	}
	describeQuotas := func() int16 {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		return ab.roundTrip(req).(*kmsg.DescribeClientQuotasResponse).ErrorCode
	}
	alterQuotas := func() int16 {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Entries = []kmsg.AlterClientQuotasRequestEntry{alterQuotaEntry(map[string]*string{"user": kmsg.StringPtr("nobody")}, quotaOp("producer_byte_rate", 1024, false))}
		resp := ab.roundTrip(req).(*kmsg.AlterClientQuotasResponse)
		if len(resp.Entries) != 1 {
			t.Fatalf("alter quotas entries %+v, want one", resp.Entries)
		}
		return resp.Entries[0].ErrorCode
	}

	ab.asUser("dave")
	wantCode(t, "AlterReplicaLogDirs without ALTER", alterLogDirs(), kerr.ClusterAuthorizationFailed)
	wantCode(t, "DescribeUserScramCredentials without DESCRIBE", describeScram(), kerr.ClusterAuthorizationFailed)
	wantCode(t, "AlterUserScramCredentials without ALTER", alterScram(), kerr.ClusterAuthorizationFailed)
	wantCode(t, "DescribeClientQuotas without DESCRIBE_CONFIGS", describeQuotas(), kerr.ClusterAuthorizationFailed)
	wantCode(t, "AlterClientQuotas without ALTER_CONFIGS", alterQuotas(), kerr.ClusterAuthorizationFailed)

	ab.allow(auth.ResourceCluster, auth.ClusterName, "dave", auth.OpAlter)
	ab.allow(auth.ResourceCluster, auth.ClusterName, "dave", auth.OpDescribeConfigs)
	if code := alterLogDirs(); code == kerr.ClusterAuthorizationFailed.Code {
		t.Fatal("AlterReplicaLogDirs refused with cluster ALTER")
	}
	// DESCRIBE is implied by ALTER, as Kafka's AclAuthorizer implies it.
	if code := describeScram(); code != 0 {
		t.Fatalf("DescribeUserScramCredentials with cluster ALTER: %d", code)
	}
	if code := alterScram(); code == kerr.ClusterAuthorizationFailed.Code {
		t.Fatal("AlterUserScramCredentials refused with cluster ALTER")
	}
	if code := describeQuotas(); code != 0 {
		t.Fatalf("DescribeClientQuotas with DESCRIBE_CONFIGS: %d", code)
	}
	// ALTER does not imply ALTER_CONFIGS.
	wantCode(t, "AlterClientQuotas with ALTER only", alterQuotas(), kerr.ClusterAuthorizationFailed)
	ab.allow(auth.ResourceCluster, auth.ClusterName, "dave", auth.OpAlterConfigs)
	if code := alterQuotas(); code != 0 {
		t.Fatalf("AlterClientQuotas with ALTER_CONFIGS: %d", code)
	}
}
