package kafkatools

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// topicDescription is what kafka-topics --describe printed for one topic.
type topicDescription struct {
	fields     map[string]string   // the topic line: PartitionCount, ReplicationFactor, Configs, ...
	partitions []map[string]string // one map per partition line, in printed order
}

// parseDescribe reads kafka-topics --describe output: a tab-separated
// "Key: value" topic line, then one indented line per partition.
func parseDescribe(out string) map[string]*topicDescription {
	topics := map[string]*topicDescription{}
	var cur *topicDescription
	for _, line := range harness.Lines(out) {
		fields := map[string]string{}
		for _, f := range strings.Split(strings.TrimSpace(line), "\t") {
			k, v, ok := strings.Cut(f, ": ")
			if ok {
				fields[k] = v
			} else if k, ok := strings.CutSuffix(f, ":"); ok {
				fields[k] = ""
			}
		}
		if _, ok := fields["Partition"]; ok && cur != nil {
			cur.partitions = append(cur.partitions, fields)
			continue
		}
		if name, ok := fields["Topic"]; ok {
			cur = &topicDescription{fields: fields}
			topics[name] = cur
		}
	}
	return topics
}

func TestTopics(t *testing.T) {
	harness.ForEachRelease(t, brookBin, nil, topicsScenario)
}

func topicsScenario(t *testing.T, env *harness.Env) {
	bs := []string{"--bootstrap-server", env.Addr()}
	const topic = "compat-topics"

	out, errOut := env.Tool("kafka-topics.sh", append(bs, "--create", "--topic", topic,
		"--partitions", "3", "--replication-factor", "1",
		"--config", "retention.ms=123456789", "--config", "max.message.bytes=65536")...)
	if !strings.Contains(out, "Created topic "+topic) {
		env.Fatalf(out, errOut, "--create: no confirmation")
	}

	out, errOut = env.Tool("kafka-topics.sh", append(bs, "--list")...)
	if !slices.Contains(harness.Lines(out), topic) {
		env.Fatalf(out, errOut, "--list: %s missing", topic)
	}

	checkDescribe := func(wantPartitions int) *topicDescription {
		t.Helper()
		out, errOut := env.Tool("kafka-topics.sh", append(bs, "--describe", "--topic", topic)...)
		d := parseDescribe(out)[topic]
		if d == nil {
			env.Fatalf(out, errOut, "--describe: no line for %s", topic)
		}
		want := map[string]string{
			"PartitionCount":    itoa(wantPartitions),
			"ReplicationFactor": "1",
		}
		for k, v := range want {
			if d.fields[k] != v {
				env.Errorf(out, errOut, "--describe: %s = %q, want %q", k, d.fields[k], v)
			}
		}
		configs := strings.Split(d.fields["Configs"], ",")
		for _, c := range []string{"retention.ms=123456789", "max.message.bytes=65536"} {
			if !slices.Contains(configs, c) {
				env.Errorf(out, errOut, "--describe: Configs %q lacks %s", d.fields["Configs"], c)
			}
		}
		if d.fields["TopicId"] == "" {
			env.Errorf(out, errOut, "--describe: empty TopicId")
		}
		if len(d.partitions) != wantPartitions {
			env.Fatalf(out, errOut, "--describe: %d partition lines, want %d", len(d.partitions), wantPartitions)
		}
		for i, p := range d.partitions {
			got := [4]string{p["Partition"], p["Leader"], p["Replicas"], p["Isr"]}
			if want := [4]string{itoa(i), "0", "0", "0"}; got != want {
				env.Errorf(out, errOut, "--describe: partition line %d = %v, want Partition/Leader/Replicas/Isr %v", i, got, want)
			}
		}
		return d
	}
	oldID := checkDescribe(3).fields["TopicId"]
	produceCounts(t, env.Addr(), topic, []int{2, 0, 0})

	env.Tool("kafka-topics.sh", append(bs, "--alter", "--topic", topic, "--partitions", "5")...)
	checkDescribe(5)

	// Shrinking and over-replicating are refused with Kafka's errors.
	refusals := []struct {
		name string
		args []string
		want string
	}{
		{"fewer partitions", []string{"--alter", "--topic", topic, "--partitions", "2"}, "InvalidPartitionsException"},
		{"replication factor above broker count", []string{"--create", "--topic", "compat-rf2",
			"--partitions", "1", "--replication-factor", "2"}, "InvalidReplicationFactorException"},
		{"existing topic", []string{"--create", "--topic", topic, "--partitions", "1"}, "TopicExistsException"},
	}
	for _, r := range refusals {
		out, errOut, err := testutil.KafkaTool(t, "kafka-topics.sh", append(bs, r.args...)...)
		if err == nil || !strings.Contains(out+errOut, r.want) {
			env.Errorf(out, errOut, "%s: err %v, want a failure naming %s", r.name, err, r.want)
		}
	}

	env.Tool("kafka-topics.sh", append(bs, "--delete", "--topic", topic)...)
	testutil.Eventually(t, 30*time.Second, func() error {
		out, _, err := testutil.KafkaTool(t, "kafka-topics.sh", append(bs, "--list")...)
		if err != nil {
			return err
		}
		if slices.Contains(harness.Lines(out), topic) {
			return errorf("--list still shows %s after --delete:\n%s", topic, out)
		}
		return nil
	})

	// A topic created again under the same name is a new topic: a new
	// topic ID and an empty log.
	env.Tool("kafka-topics.sh", append(bs, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")...)
	out, errOut = env.Tool("kafka-topics.sh", append(bs, "--describe", "--topic", topic)...)
	if d := parseDescribe(out)[topic]; d == nil || d.fields["TopicId"] == oldID || d.fields["PartitionCount"] != "1" {
		env.Errorf(out, errOut, "re-created %s: want PartitionCount 1 and a TopicId other than %s", topic, oldID)
	}
	if got := getOffsets(env, topic); len(got) != 1 || got[0] != topic+":0:0" {
		t.Errorf("re-created %s: log end offsets %q, want %s:0:0", topic, got, topic)
	}
}
