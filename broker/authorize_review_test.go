package broker

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
)

// TxnOffsetCommit checks READ on each topic after the transactional id
// and the group, as Kafka does: a topic without it answers
// TOPIC_AUTHORIZATION_FAILED on each of its partitions, checked before the
// topic's existence, and the other topics go on.
func TestAuthorizeTxnOffsetCommitTopics(t *testing.T) {
	ab := startACLBroker(t, nil)
	ab.createTopic("ta", 2, nil)
	ab.createTopic("tb", 1, nil)
	ab.allow(auth.ResourceTransactionalID, "tx-o", "alice", auth.OpWrite)
	ab.allow(auth.ResourceGroup, "g-o", "alice", auth.OpRead)
	ab.allow(auth.ResourceTopic, "ta", "alice", auth.OpRead)
	ab.addACL(auth.ResourceTopic, auth.PatternPrefixed, "known", "User:alice", auth.OpRead, auth.PermAllow)
	ab.asUser("alice")

	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = 3, "tx-o", "g-o", 1, 0
	req.Generation = -1
	for _, tp := range []struct {
		topic string
		parts []int32
	}{{"ta", []int32{0, 1}}, {"tb", []int32{0}}, {"nowhere", []int32{0}}, {"known-nowhere", []int32{0, 1}}} {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = tp.topic
		for _, p := range tp.parts {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, 1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	got := map[string]int16{}
	for _, rt := range ab.roundTrip(req).(*kmsg.TxnOffsetCommitResponse).Topics {
		for _, rp := range rt.Partitions {
			got[fmt.Sprintf("%s-%d", rt.Topic, rp.Partition)] = rp.ErrorCode
		}
	}
	denied, unknown := kerr.TopicAuthorizationFailed.Code, kerr.UnknownTopicOrPartition.Code
	for _, tc := range []struct {
		tp      string
		want    int16
		notWant bool // want is the code it must not have
	}{
		{"ta-0", denied, true},
		{"ta-1", denied, true},
		{"tb-0", denied, false},
		{"nowhere-0", denied, false},
		{"known-nowhere-0", unknown, false},
		{"known-nowhere-1", unknown, false},
	} {
		code, ok := got[tc.tp]
		switch {
		case !ok:
			t.Errorf("%s: not in the answer %v", tc.tp, got)
		case tc.notWant && code == tc.want:
			t.Errorf("%s: %s with READ on the topic", tc.tp, kerr.ErrorForCode(code))
		case !tc.notWant && code != tc.want:
			t.Errorf("%s: code %d (%v), want %s", tc.tp, code, kerr.ErrorForCode(code), kerr.ErrorForCode(tc.want))
		}
	}
}

// CreateTopics v5+ returns a new topic's configs, partition count,
// replication factor and id only to a principal with DESCRIBE_CONFIGS on
// it; without, the topic is still created and its config error is
// TOPIC_AUTHORIZATION_FAILED, as in Kafka.
func TestAuthorizeCreateTopicsConfigs(t *testing.T) {
	ab := startACLBroker(t, nil)
	ab.allow(auth.ResourceCluster, auth.ClusterName, "alice", auth.OpCreate)
	ab.allow(auth.ResourceTopic, "cfg-yes", "alice", auth.OpDescribeConfigs)
	ab.allow(auth.ResourceTopic, "cfg-alter", "alice", auth.OpAlterConfigs) // implies DESCRIBE_CONFIGS
	ab.asUser("alice")
	for _, tc := range []struct {
		topic        string
		version      int16
		validateOnly bool
		described    bool
	}{
		{"cfg-no", 7, false, false},
		{"cfg-no-validate", 7, true, false},
		{"cfg-no-v5", 5, false, false},
		{"cfg-yes", 7, false, true},
		{"cfg-alter", 6, false, true},
	} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.ValidateOnly, req.TimeoutMillis = tc.version, tc.validateOnly, 30000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = tc.topic, 1, 1
		req.Topics = append(req.Topics, rt)
		st := ab.roundTrip(req).(*kmsg.CreateTopicsResponse).Topics[0]
		if st.ErrorCode != 0 {
			t.Errorf("%s: not created: %d %v", tc.topic, st.ErrorCode, st.ErrorMessage)
			continue
		}
		if tc.described {
			if st.ConfigErrorCode != 0 || len(st.Configs) == 0 || st.NumPartitions != 1 || st.ReplicationFactor != 1 || (tc.version >= 7 && st.TopicID == [16]byte{}) {
				t.Errorf("%s: with DESCRIBE_CONFIGS: config error %d, %d configs, partitions %d, rf %d, id %x",
					tc.topic, st.ConfigErrorCode, len(st.Configs), st.NumPartitions, st.ReplicationFactor, st.TopicID)
			}
			continue
		}
		if st.ConfigErrorCode != kerr.TopicAuthorizationFailed.Code || len(st.Configs) != 0 || st.NumPartitions != -1 || st.ReplicationFactor != -1 || st.TopicID != [16]byte{} {
			t.Errorf("%s: without DESCRIBE_CONFIGS: config error %d, %d configs, partitions %d, rf %d, id %x",
				tc.topic, st.ConfigErrorCode, len(st.Configs), st.NumPartitions, st.ReplicationFactor, st.TopicID)
		}
	}
	// Hiding the configs hides nothing else: every topic but the
	// validated one was created.
	for topic, created := range map[string]bool{"cfg-no": true, "cfg-no-validate": false, "cfg-no-v5": true, "cfg-yes": true, "cfg-alter": true} {
		_, _, err := ab.b.store.Get(testContext(t), "/brokers/topics/"+topic)
		if (err == nil) != created {
			t.Errorf("%s: /brokers/topics: %v, want created %v", topic, err, created)
		}
	}
}

// AddPartitionsToTxn v4+ comes from brokers verifying a produce (KIP-890):
// Kafka checks CLUSTER_ACTION and, unlike v0-3, no WRITE on the topics
// (KafkaApis: "Only request versions less than 4 need write
// authorization since they come from clients"). This pins that down.
func TestAuthorizeAddPartitionsToTxnVerification(t *testing.T) {
	ab := startACLBroker(t, nil)
	ab.createTopic("tv", 1, nil)
	ab.asUser("broker")
	verify := func() (top int16, parts []int16) {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 4
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.VerifyOnly = "tx-v", 1, true
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = "tv", []int32{0}
		tx.Topics = append(tx.Topics, tt)
		req.Transactions = append(req.Transactions, tx)
		resp := ab.roundTrip(req).(*kmsg.AddPartitionsToTxnResponse)
		for _, tr := range resp.Transactions {
			for _, rt := range tr.Topics {
				for _, rp := range rt.Partitions {
					parts = append(parts, rp.ErrorCode)
				}
			}
		}
		return resp.ErrorCode, parts
	}
	if top, _ := verify(); top != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("without CLUSTER_ACTION: code %d, want CLUSTER_AUTHORIZATION_FAILED", top)
	}
	ab.allow(auth.ResourceCluster, auth.ClusterName, "broker", auth.OpClusterAction)
	top, parts := verify()
	if top != 0 || len(parts) != 1 || parts[0] == kerr.TopicAuthorizationFailed.Code {
		t.Errorf("with CLUSTER_ACTION and no topic WRITE: code %d, partitions %v", top, parts)
	}
}
