package cluster

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestJavaConsumerFetchesFromLocalRack: brokers in racks rack-1..3 with
// Kafka's RackAwareReplicaSelector; Kafka's console consumer with
// client.rack of a follower's rack is sent there by the leader (KIP-392)
// and reads every record from that follower. The consumer's own debug log
// (its fetch requests name the node they go to) proves which broker served
// the records: after its first fetch at offset 0, which the leader answers
// with the preferred replica and no records, it never fetches from the
// leader again.
func TestJavaConsumerFetchesFromLocalRack(t *testing.T) {
	c := startClusterEach(t, 3, map[string]string{
		"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
	}, func(id int32) map[string]string {
		return map[string]string{"broker.rack": "rack-" + strconv.Itoa(int(id))}
	})
	const topic = "rack-local"
	c.createTopic(topic, 1, nil)
	v := c.converge(c.ids, healthy(topic, 1, c.ids))
	leader := v.Partitions[tp{topic, 0}].Leader
	follower := leader%3 + 1

	cl := testutil.Client(t, c.bootstrap(), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const n = 20
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("r%d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	t.Setenv("KAFKA_OPTS", "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.consumer.internals=debug")
	stdout, stderr, err := testutil.KafkaTool(t, "kafka-console-consumer.sh", "--bootstrap-server", c.broker(leader).Addr(),
		"--topic", topic, "--from-beginning", "--max-messages", strconv.Itoa(n), "--timeout-ms", "60000",
		"--consumer-property", "client.rack=rack-"+strconv.Itoa(int(follower)))
	if err != nil {
		t.Fatalf("kafka-console-consumer: %v\n%s", err, tail(stderr, 40))
	}
	// Kafka 4.4 prints a deprecation notice for --consumer-property first.
	if got := len(regexp.MustCompile(`(?m)^r\d+$`).FindAllString(stdout, -1)); got != n {
		t.Fatalf("consumed %d records, want %d:\n%s", got, n, stdout)
	}
	if !strings.Contains(stderr, fmt.Sprintf("Updating preferred read replica for partition %s-0 to %d", topic, follower)) {
		t.Fatalf("the consumer was not sent to follower %d:\n%s", follower, tail(stderr, 40))
	}
	// "Added READ_UNCOMMITTED fetch request for partition T-0 at position
	// FetchPosition{offset=O, ...} to node HOST:PORT (id: N rack: R ...)".
	fetches := regexp.MustCompile(`fetch request for partition `+topic+`-0 at position FetchPosition\{offset=(\d+),.*? to node \S+ \(id: (\d+)`).FindAllStringSubmatch(stderr, -1)
	toFollower := 0
	for _, f := range fetches {
		switch f[2] {
		case strconv.Itoa(int(follower)):
			toFollower++
		case strconv.Itoa(int(leader)):
			if f[1] != "0" {
				t.Fatalf("the consumer fetched from leader %d at offset %s: the leader served records", leader, f[1])
			}
		}
	}
	if toFollower == 0 {
		t.Fatalf("no fetch went to follower %d (%d fetches logged):\n%s", follower, len(fetches), tail(stderr, 40))
	}
	t.Logf("%d fetches logged, %d to follower %d", len(fetches), toFollower, follower)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
