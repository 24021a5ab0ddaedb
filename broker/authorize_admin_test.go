package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

func TestAuthorizeAdminAPIs(t *testing.T) {
	ab := startACLBroker(t, map[string]string{"auto.create.topics.enable": "false"})
	create := func(topic string) int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = 4, 10000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
		req.Topics = append(req.Topics, rt)
		return ab.roundTrip(req).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
	}
	ab.asUser("alice")
	wantCode(t, "create without acl", create("a1"), kerr.TopicAuthorizationFailed)
	ab.addACL(auth.ResourceTopic, auth.PatternPrefixed, "a", "User:alice", auth.OpCreate, auth.PermAllow)
	if code := create("a1"); code != 0 {
		t.Fatalf("create with prefixed CREATE: %d", code)
	}
	ab.asUser("bob")
	ab.allow(auth.ResourceCluster, auth.ClusterName, "bob", auth.OpCreate)
	if code := create("b1"); code != 0 {
		t.Fatalf("create with cluster CREATE: %d", code)
	}

	describeConfigs := func(typ kmsg.ConfigResourceType, name string) int16 {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		req.Resources = append(req.Resources, rr)
		return ab.roundTrip(req).(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode
	}
	alterConfigs := func(name string) int16 {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		v := "1000"
		c.Name, c.Value = "retention.ms", &v
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		return ab.roundTrip(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode
	}
	ab.asUser("carol")
	wantCode(t, "describe topic configs", describeConfigs(kmsg.ConfigResourceTypeTopic, "a1"), kerr.TopicAuthorizationFailed)
	wantCode(t, "describe broker configs", describeConfigs(kmsg.ConfigResourceTypeBroker, "0"), kerr.ClusterAuthorizationFailed)
	wantCode(t, "alter topic configs", alterConfigs("a1"), kerr.TopicAuthorizationFailed)
	// ALTER_CONFIGS implies DESCRIBE_CONFIGS.
	ab.allow(auth.ResourceTopic, "a1", "carol", auth.OpAlterConfigs)
	if code := describeConfigs(kmsg.ConfigResourceTypeTopic, "a1"); code != 0 {
		t.Fatalf("describe with ALTER_CONFIGS: %d", code)
	}
	if code := alterConfigs("a1"); code != 0 {
		t.Fatalf("alter with ALTER_CONFIGS: %d", code)
	}
	ab.allow(auth.ResourceCluster, auth.ClusterName, "carol", auth.OpDescribeConfigs)
	if code := describeConfigs(kmsg.ConfigResourceTypeBroker, "0"); code != 0 {
		t.Fatalf("describe broker with DESCRIBE_CONFIGS: %d", code)
	}

	createPartitions := func(topic string) int16 {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, 2
		req.Topics = append(req.Topics, rt)
		return ab.roundTrip(req).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode
	}
	deleteRecords := func(topic string) int16 {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.TimeoutMillis = 10000
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return ab.roundTrip(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "create partitions without ALTER", createPartitions("a1"), kerr.TopicAuthorizationFailed)
	wantCode(t, "delete records without DELETE", deleteRecords("a1"), kerr.TopicAuthorizationFailed)
	ab.allow(auth.ResourceTopic, "a1", "carol", auth.OpAlter)
	if code := createPartitions("a1"); code != 0 {
		t.Fatalf("create partitions with ALTER: %d", code)
	}

	del := func(topic string) int16 {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version, req.TimeoutMillis, req.TopicNames = 4, 10000, []string{topic}
		return ab.roundTrip(req).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode
	}
	wantCode(t, "delete without acl", del("a1"), kerr.TopicAuthorizationFailed)
	ab.allow(auth.ResourceTopic, "a1", "carol", auth.OpDelete)
	if code := deleteRecords("a1"); code == kerr.TopicAuthorizationFailed.Code {
		t.Fatal("delete records with DELETE: refused")
	}
	if code := del("a1"); code != 0 {
		t.Fatalf("delete with DELETE: %d", code)
	}
}
