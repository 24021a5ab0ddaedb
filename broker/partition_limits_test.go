package broker

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
)

func createTopicsRequest(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 5
	req.TimeoutMillis = 30000
	req.ValidateOnly = validateOnly
	req.Topics = topics
	return req
}

func topicRequest(name string, partitions int32, rf int16) kmsg.CreateTopicsRequestTopic {
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	return rt
}

// TestCreateTopicsPartitionLimit checks that one CreateTopics request may
// create at most controller.MaxPartitionsPerRequest partitions over all its
// topics, as in Kafka 4.x: more fails the whole request with
// POLICY_VIOLATION at once, and the broker keeps serving.
func TestCreateTopicsPartitionLimit(t *testing.T) {
	tb := startBroker(t, nil)
	manual := topicRequest("manual", -1, -1)
	for p := range int32(controller.MaxPartitionsPerRequest + 1) {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, []int32{0}
		manual.ReplicaAssignment = append(manual.ReplicaAssignment, a)
	}
	huge := topicRequest("huge-rf", 1, math.MaxInt16)
	for _, tc := range []struct {
		name string
		req  *kmsg.CreateTopicsRequest
		want []int16 // per topic
	}{
		{"validate-over", createTopicsRequest(true, topicRequest("a", controller.MaxPartitionsPerRequest+1, 1)),
			[]int16{kerr.PolicyViolation.Code}},
		{"validate-over-summed", createTopicsRequest(true, topicRequest("a", 5001, 1), topicRequest("b", 5000, 1)),
			[]int16{kerr.PolicyViolation.Code, kerr.PolicyViolation.Code}},
		{"validate-manual-over", createTopicsRequest(true, manual),
			[]int16{kerr.PolicyViolation.Code}},
		{"validate-at-limit", createTopicsRequest(true, topicRequest("a", controller.MaxPartitionsPerRequest, 1)),
			[]int16{0}},
		{"max-int32", createTopicsRequest(false, topicRequest("max", math.MaxInt32, 1)),
			[]int16{kerr.PolicyViolation.Code}},
		{"max-int32-default-rf", createTopicsRequest(false, topicRequest("max", math.MaxInt32, -1), topicRequest("ok", 1, 1)),
			[]int16{kerr.PolicyViolation.Code, kerr.PolicyViolation.Code}},
		{"huge-replication-factor", createTopicsRequest(false, huge),
			[]int16{kerr.InvalidReplicationFactor.Code}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := tb.roundTrip(tc.req).(*kmsg.CreateTopicsResponse)
			if len(resp.Topics) != len(tc.want) {
				t.Fatalf("%d topics answered, want %d", len(resp.Topics), len(tc.want))
			}
			for i, rt := range resp.Topics {
				if rt.ErrorCode != tc.want[i] {
					t.Errorf("topic %s: error %v (%v), want %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode), rt.ErrorMessage, kerr.ErrorForCode(tc.want[i]))
				}
				if rt.ErrorCode == kerr.PolicyViolation.Code && (rt.ErrorMessage == nil || *rt.ErrorMessage != controller.TooManyPartitionsMessage) {
					t.Errorf("topic %s: message %v, want %q", rt.Topic, rt.ErrorMessage, controller.TooManyPartitionsMessage)
				}
			}
		})
	}
	// Still serving, and nothing was created.
	topics, err := tb.admin().ListTopics(testContext(t))
	if err != nil {
		t.Fatalf("list topics after the refused requests: %v", err)
	}
	for _, name := range []string{"a", "b", "manual", "max", "ok", "huge-rf"} {
		if topics.Has(name) {
			t.Errorf("topic %s exists after a refused request", name)
		}
	}
}

func createPartitionsRequest(validateOnly bool, counts map[string]int32) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 2
	req.TimeoutMillis = 30000
	req.ValidateOnly = validateOnly
	for name, n := range counts {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, n
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// TestCreatePartitionsLimit checks the same bound on CreatePartitions,
// counted as partitions added over all topics of the request.
func TestCreatePartitionsLimit(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("p1", 1, nil)
	tb.createTopic("p2", 1, nil)
	manual := createPartitionsRequest(true, map[string]int32{"p1": 2})
	for range controller.MaxPartitionsPerRequest + 1 {
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = []int32{0}
		manual.Topics[0].Assignment = append(manual.Topics[0].Assignment, a)
	}
	for _, tc := range []struct {
		name string
		req  *kmsg.CreatePartitionsRequest
		want int16 // for every topic
	}{
		{"validate-over", createPartitionsRequest(true, map[string]int32{"p1": controller.MaxPartitionsPerRequest + 2}), kerr.PolicyViolation.Code},
		{"validate-over-summed", createPartitionsRequest(true, map[string]int32{"p1": 5001, "p2": 5002}), kerr.PolicyViolation.Code},
		{"validate-manual-over", manual, kerr.PolicyViolation.Code},
		{"validate-at-limit", createPartitionsRequest(true, map[string]int32{"p1": controller.MaxPartitionsPerRequest + 1}), 0},
		{"max-int32", createPartitionsRequest(false, map[string]int32{"p1": math.MaxInt32, "p2": 2}), kerr.PolicyViolation.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := tb.roundTrip(tc.req).(*kmsg.CreatePartitionsResponse)
			if len(resp.Topics) != len(tc.req.Topics) {
				t.Fatalf("%d topics answered, want %d", len(resp.Topics), len(tc.req.Topics))
			}
			for _, rt := range resp.Topics {
				if rt.ErrorCode != tc.want {
					t.Errorf("topic %s: error %v (%v), want %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode), rt.ErrorMessage, kerr.ErrorForCode(tc.want))
				}
			}
		})
	}
	md, err := tb.admin().Metadata(testContext(t), "p1", "p2")
	if err != nil {
		t.Fatalf("metadata after the refused requests: %v", err)
	}
	for _, name := range []string{"p1", "p2"} {
		if n := len(md.Topics[name].Partitions); n != 1 {
			t.Errorf("topic %s has %d partitions after refused requests, want 1", name, n)
		}
	}
}
