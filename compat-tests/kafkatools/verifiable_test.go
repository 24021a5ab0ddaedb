package kafkatools

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
)

// verifiableEvent is one JSON line of kafka-verifiable-producer/consumer.
type verifiableEvent struct {
	Name       string `json:"name"`
	Value      string `json:"value"`
	Offset     int64  `json:"offset"`
	Partition  int32  `json:"partition"`
	Sent       int    `json:"sent"`
	Acked      int    `json:"acked"`
	Success    *bool  `json:"success"`
	Partitions []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Count     int    `json:"count"`
		MinOffset int64  `json:"minOffset"`
		MaxOffset int64  `json:"maxOffset"`
		Offset    int64  `json:"offset"`
		Error     string `json:"error"`
	} `json:"partitions"`
}

func parseEvents(env *harness.Env, out, errOut string) []verifiableEvent {
	env.T.Helper()
	var events []verifiableEvent
	for _, line := range harness.Lines(out) {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e verifiableEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			env.Fatalf(out, errOut, "event %q: %v", line, err)
		}
		events = append(events, e)
	}
	return events
}

// TestVerifiableProducerConsumer runs the tools Kafka's own system tests
// drive clusters with: every acked value is consumed once, offsets commit.
func TestVerifiableProducerConsumer(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	const topic, group, n = "compat-verifiable", "compat-verifiable-g", 3000
	createTopic(env, topic, 3)

	out, errOut := env.Tool("kafka-verifiable-producer.sh", "--bootstrap-server", env.Addr(), "--topic", topic,
		"--max-messages", strconv.Itoa(n), "--acks", "-1")
	acked := map[string]bool{}
	var summary *verifiableEvent
	for _, e := range parseEvents(env, out, errOut) {
		switch e.Name {
		case "producer_send_success":
			acked[e.Value] = true
		case "producer_send_error":
			env.Fatalf(out, errOut, "producer_send_error for value %s", e.Value)
		case "tool_data":
			summary = &e
		}
	}
	if summary == nil || summary.Sent != n || summary.Acked != n || len(acked) != n {
		env.Fatalf(out, errOut, "producer: %d distinct values acked, summary %+v; want %d sent and acked", len(acked), summary, n)
	}

	out, errOut = env.Tool("kafka-verifiable-consumer.sh", "--bootstrap-server", env.Addr(), "--topic", topic,
		"--group-id", group, "--max-messages", strconv.Itoa(n), "--reset-policy", "earliest", "--verbose")
	consumed := map[string]int{}
	counted := 0
	var commits, failedCommits int
	for _, e := range parseEvents(env, out, errOut) {
		switch e.Name {
		case "record_data":
			consumed[e.Value]++
		case "records_consumed":
			for _, p := range e.Partitions {
				counted += p.Count
			}
		case "offsets_committed":
			commits++
			if e.Success == nil || !*e.Success {
				failedCommits++
			}
		}
	}
	if counted != n || len(consumed) != n || failedCommits > 0 || commits == 0 {
		env.Fatalf(out, errOut, "consumer: %d records counted, %d distinct values, %d of %d commits failed; want %d, %d, none of at least one",
			counted, len(consumed), failedCommits, commits, n, n)
	}
	for v := range acked {
		if consumed[v] != 1 {
			env.Fatalf(out, errOut, "value %s consumed %d times, want once", v, consumed[v])
		}
	}

	out, _ = env.Tool("kafka-consumer-groups.sh", "--bootstrap-server", env.Addr(), "--describe", "--group", group)
	rows := parseTable(out)
	// The producer's sticky partitioner may leave a partition empty; an
	// empty group lists only partitions with a committed offset.
	total := 0
	for p, row := range rows {
		if row["LAG"] != "0" {
			env.Errorf(out, "", "partition %s: lag %q after the verifiable consumer, want 0", p, row["LAG"])
		}
		total += atoi(t, row["CURRENT-OFFSET"])
	}
	if total != n {
		env.Errorf(out, "", "committed offsets sum to %d, want %d", total, n)
	}
}

func TestEndToEndLatency(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	const topic = "compat-e2e"
	createTopic(env, topic, 1)
	// Arguments: broker, topic, messages, producer acks, message size.
	out, errOut := env.Tool("kafka-e2e-latency.sh", env.Addr(), topic, "500", "all", "100")
	harness.LogLines(t, "kafka-e2e-latency", lastLines(out, 2))
	if !strings.Contains(out, "Avg latency:") || errorWords.MatchString(out+errOut) {
		env.Fatalf(out, errOut, "kafka-e2e-latency did not finish cleanly")
	}
}

// TestConsoleCompression produces through the Java producer with each
// codec and reads the records back with the Java consumer.
func TestConsoleCompression(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	const topic = "compat-compression"
	createTopic(env, topic, 1)
	var want []string
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		var lines []string
		for i := range 20 {
			lines = append(lines, fmt.Sprintf("h:%s\t%s-%d\t%s", codec, codec, i, strings.Repeat(codec, 50)))
		}
		args := append([]string{"--bootstrap-server", env.Addr(), "--topic", topic,
			"--compression-codec", codec}, producerProps...)
		env.ToolStdin(strings.NewReader(strings.Join(lines, "\n")+"\n"), "kafka-console-producer.sh", args...)
		want = append(want, lines...)
	}
	got, out, errOut := consume(env, topic, "--max-messages", strconv.Itoa(len(want)))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		env.Fatalf(out, errOut, "consumed records differ from the %d produced", len(want))
	}
}

func lastLines(out string, n int) string {
	lines := harness.Lines(out)
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
