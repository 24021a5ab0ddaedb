package sarama_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func testClusterAdmin(t *testing.T, addr string, version sarama.KafkaVersion) {
	admin := newAdmin(t, addr, version)
	const topic = "sarama-admin"
	retention := "123456789"
	err := admin.CreateTopic(topic, &sarama.TopicDetail{
		NumPartitions:     3,
		ReplicationFactor: 1,
		ConfigEntries:     map[string]*string{"retention.ms": &retention},
	}, false)
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}

	// A second create of the same name is refused with Kafka's error.
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	if !isTopicError(err, sarama.ErrTopicAlreadyExists) {
		t.Errorf("CreateTopic of an existing topic: %v, want %v", err, sarama.ErrTopicAlreadyExists)
	}

	md, err := admin.DescribeTopics([]string{topic})
	if err != nil {
		t.Fatalf("DescribeTopics: %v", err)
	}
	if len(md) != 1 || md[0].Name != topic || md[0].Err != sarama.ErrNoError {
		t.Fatalf("DescribeTopics: %+v", md)
	}
	if got := len(md[0].Partitions); got != 3 {
		t.Fatalf("DescribeTopics: %d partitions, want 3", got)
	}
	for _, p := range md[0].Partitions {
		if p.Err != sarama.ErrNoError || p.Leader != 0 || !slices.Equal(p.Replicas, []int32{0}) || !slices.Equal(p.Isr, []int32{0}) {
			t.Errorf("partition %d: err %v leader %d replicas %v isr %v, want none/0/[0]/[0]",
				p.ID, p.Err, p.Leader, p.Replicas, p.Isr)
		}
	}

	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("DescribeConfig: %v", err)
	}
	got := map[string]sarama.ConfigEntry{}
	for _, e := range entries {
		got[e.Name] = e
	}
	if e := got["retention.ms"]; e.Value != retention || e.Default {
		t.Errorf("DescribeConfig retention.ms = %+v, want %s set on the topic", e, retention)
	}
	// A config left alone reports Kafka's default.
	if e, ok := got["cleanup.policy"]; !ok || e.Value != "delete" {
		t.Errorf("DescribeConfig cleanup.policy = %+v (present %v), want delete", e, ok)
	}

	topics, err := admin.ListTopics()
	if err != nil {
		t.Fatalf("ListTopics: %v", err)
	}
	if d, ok := topics[topic]; !ok || d.NumPartitions != 3 {
		t.Errorf("ListTopics: %s = %+v (present %v), want 3 partitions", topic, d, ok)
	}

	if err := admin.DeleteTopic(topic); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	eventually(t, 30*time.Second, func() error {
		topics, err := admin.ListTopics()
		if err != nil {
			return err
		}
		if _, ok := topics[topic]; ok {
			return fmt.Errorf("ListTopics still shows %s after DeleteTopic", topic)
		}
		return nil
	})
	if err := admin.DeleteTopic(topic); !isTopicError(err, sarama.ErrUnknownTopicOrPartition) {
		t.Errorf("DeleteTopic of a deleted topic: %v, want %v", err, sarama.ErrUnknownTopicOrPartition)
	}
}

// isTopicError reports whether err is code, bare (DeleteTopic) or inside
// sarama's *TopicError (CreateTopic).
func isTopicError(err error, code sarama.KError) bool {
	var te *sarama.TopicError
	if errors.As(err, &te) {
		return te.Err == code
	}
	return errors.Is(err, code)
}
