package cluster

import (
	"fmt"
	"strings"
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestKafkaTopicsCreateRF3 creates a replicated topic with Apache Kafka's
// kafka-topics against a broker that is not the controller (the admin
// client must route CreateTopics by Metadata's controller_id), then checks
// that every broker's Metadata agrees with the others and with ZooKeeper.
func TestKafkaTopicsCreateRF3(t *testing.T) {
	c := startCluster(t, 3, nil)
	ctrl := c.controller()
	via := c.others(ctrl)[0]
	const topic, partitions = "orders", 6

	stdout, stderr, err := testutil.KafkaTool(t, "kafka-topics.sh", "--bootstrap-server", c.broker(via).Addr(),
		"--create", "--topic", topic, "--partitions", fmt.Sprint(partitions), "--replication-factor", "3")
	if err != nil || !strings.Contains(stdout, "Created topic "+topic) {
		t.Fatalf("kafka-topics --create via broker %d (controller %d): %v\nstdout: %s\nstderr: %s", via, ctrl, err, stdout, stderr)
	}

	v := c.converge(c.ids, healthy(topic, partitions, c.ids))
	t.Logf("agreed metadata: %s", v)
	if v.Controller != ctrl {
		t.Errorf("controller_id %d, was %d before the topic was created", v.Controller, ctrl)
	}

	// At creation each partition's leader is its first replica, and the
	// replica lists rotate over the brokers, so leadership is balanced.
	leads := map[int32]int{}
	for _, p := range v.topicPartitions(topic) {
		pv := v.Partitions[p]
		if pv.Leader != pv.Replicas[0] {
			t.Errorf("%s: leader %d, want the preferred (first) replica of %v", p, pv.Leader, pv.Replicas)
		}
		leads[pv.Leader]++
	}
	for _, id := range c.ids {
		if leads[id] != partitions/len(c.ids) {
			t.Errorf("broker %d leads %d partitions, want %d (leaders %v)", id, leads[id], partitions/len(c.ids), leads)
		}
	}

	// ZooKeeper is the source of truth that Metadata must reflect.
	for _, p := range v.topicPartitions(topic) {
		st, err := c.zkv.partitionState(topic, p.partition)
		if err != nil {
			t.Fatal(err)
		}
		pv := v.Partitions[p]
		if st.Leader != pv.Leader || st.LeaderEpoch != pv.LeaderEpoch || fmt.Sprint(sortedIDs(st.ISR)) != fmt.Sprint(pv.ISR) {
			t.Errorf("%s: ZooKeeper state leader=%d epoch=%d isr=%v, Metadata leader=%d epoch=%d isr=%v",
				p, st.Leader, st.LeaderEpoch, st.ISR, pv.Leader, pv.LeaderEpoch, pv.ISR)
		}
	}

	// kafka-topics --describe through a third broker sees the same.
	other := c.others(ctrl, via)[0]
	stdout, stderr, err = testutil.KafkaTool(t, "kafka-topics.sh", "--bootstrap-server", c.broker(other).Addr(),
		"--describe", "--topic", topic)
	if err != nil {
		t.Fatalf("kafka-topics --describe via broker %d: %v\n%s", other, err, stderr)
	}
	if !strings.Contains(stdout, "ReplicationFactor: 3") || strings.Count(stdout, "Partition: ") != partitions {
		t.Errorf("kafka-topics --describe via broker %d:\n%s", other, stdout)
	}
	for _, p := range v.topicPartitions(topic) {
		pv := v.Partitions[p]
		line := fmt.Sprintf("Partition: %d\tLeader: %d\tReplicas: %s\tIsr: ", p.partition, pv.Leader, joinIDs(pv.Replicas))
		if !strings.Contains(stdout, line) {
			t.Errorf("kafka-topics --describe lacks %q:\n%s", line, stdout)
		}
	}
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}
