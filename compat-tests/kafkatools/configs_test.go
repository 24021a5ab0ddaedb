package kafkatools

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// dynamicConfigs parses kafka-configs --describe of one entity: the
// "  name=value sensitive=... synonyms={...}" lines, name -> value.
func dynamicConfigs(out string) map[string]string {
	cfg := map[string]string{}
	for _, line := range harness.Lines(out) {
		if !strings.HasPrefix(line, "  ") {
			continue
		}
		kv, _, _ := strings.Cut(strings.TrimSpace(line), " sensitive=")
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			cfg[k] = v
		}
	}
	return cfg
}

// describeTopicConfig returns one config entry through DescribeConfigs.
func describeTopicConfig(t *testing.T, adm *kadm.Client, topic, name string) (kadm.Config, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return kadm.Config{}, err
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return kadm.Config{}, err
	}
	if rc.Err != nil {
		return kadm.Config{}, rc.Err
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c, nil
		}
	}
	return kadm.Config{}, fmt.Errorf("DescribeConfigs of %s has no %s", topic, name)
}

func TestConfigs(t *testing.T) {
	// Retention runs every half second so that an altered retention.ms
	// shows in behaviour within the test.
	harness.ForEachRelease(t, brookBin, map[string]string{"log.retention.check.interval.ms": "500"}, configsScenario)
}

func configsScenario(t *testing.T, env *harness.Env) {
	const topic = "compat-configs"
	createTopic(env, topic, 1)
	entity := []string{"--bootstrap-server", env.Addr(), "--entity-type", "topics", "--entity-name", topic}
	describe := func() (map[string]string, string, string) {
		t.Helper()
		out, errOut := env.Tool("kafka-configs.sh", append(entity, "--describe")...)
		return dynamicConfigs(out), out, errOut
	}

	if cfg, out, errOut := describe(); len(cfg) != 0 {
		env.Fatalf(out, errOut, "a new topic has dynamic configs %v", cfg)
	}
	out, errOut := env.Tool("kafka-configs.sh", append(entity, "--describe", "--all")...)
	all := dynamicConfigs(out)
	for k, v := range map[string]string{"retention.ms": "604800000", "max.message.bytes": "1048588", "cleanup.policy": "delete"} {
		if all[k] != v {
			env.Errorf(out, errOut, "--describe --all: %s=%q, want Kafka's default %q", k, all[k], v)
		}
	}

	env.Tool("kafka-configs.sh", append(entity, "--alter", "--add-config", "max.message.bytes=2048,retention.ms=86400000")...)
	cfg, out, errOut := describe()
	if cfg["max.message.bytes"] != "2048" || cfg["retention.ms"] != "86400000" || len(cfg) != 2 {
		env.Fatalf(out, errOut, "after --add-config: dynamic configs %v", cfg)
	}
	if !strings.Contains(out, "DYNAMIC_TOPIC_CONFIG:retention.ms=86400000") {
		env.Errorf(out, errOut, "after --add-config: retention.ms synonym is not DYNAMIC_TOPIC_CONFIG")
	}
	adm := kadm.NewClient(testutil.Client(t, env.Addr()))
	c, err := describeTopicConfig(t, adm, topic, "retention.ms")
	if err != nil || c.MaybeValue() != "86400000" || c.Source.String() != "DYNAMIC_TOPIC_CONFIG" {
		t.Errorf("DescribeConfigs retention.ms = %q from %v (err %v), want 86400000 from DYNAMIC_TOPIC_CONFIG", c.MaybeValue(), c.Source, err)
	}

	// max.message.bytes applies to produce at once.
	// Uncompressed random bytes: the limit applies to the batch as sent.
	cl := testutil.Client(t, env.Addr(), kgo.ProducerBatchCompression(kgo.NoCompression()))
	produce := func(size int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		value := make([]byte, size)
		rand.Read(value)
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr()
	}
	if err := produce(4000); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("produce 4000 bytes under max.message.bytes=2048: err %v, want MESSAGE_TOO_LARGE", err)
	}
	env.Tool("kafka-configs.sh", append(entity, "--alter", "--delete-config", "max.message.bytes")...)
	if cfg, out, errOut := describe(); len(cfg) != 1 || cfg["retention.ms"] != "86400000" {
		env.Fatalf(out, errOut, "after --delete-config max.message.bytes: dynamic configs %v, want only retention.ms", cfg)
	}
	if err := produce(4000); err != nil {
		t.Errorf("produce 4000 bytes after --delete-config max.message.bytes: %v", err)
	}

	// retention.ms applies to stored data, on a topic of its own. With
	// segment.ms=1 each of these records, stamped a minute ago 10 ms apart,
	// rolls a new segment (a segment rolls once a batch's timestamp is
	// segment.ms past its first one); retention.ms=1 then expires them all,
	// the active segment included (it is rolled first, as in Kafka), so
	// the log start offset moves to the end.
	const retTopic = "compat-configs-retention"
	createTopic(env, retTopic, 1)
	retEntity := []string{"--bootstrap-server", env.Addr(), "--entity-type", "topics", "--entity-name", retTopic}
	env.Tool("kafka-configs.sh", append(retEntity, "--alter", "--add-config", "segment.ms=1")...)
	old := time.Now().Add(-time.Minute)
	const end = 5
	for i := range end {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ts := old.Add(time.Duration(i) * 10 * time.Millisecond)
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: retTopic, Value: fmt.Appendf(nil, "old-%d", i), Timestamp: ts}).FirstErr()
		cancel()
		if err != nil {
			t.Fatalf("produce record %d: %v", i, err)
		}
	}
	env.Tool("kafka-configs.sh", append(retEntity, "--alter", "--add-config", "retention.ms=1")...)
	var start int64
	testutil.Eventually(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		starts, err := adm.ListStartOffsets(ctx, retTopic)
		if err != nil {
			return err
		}
		o, ok := starts.Lookup(retTopic, 0)
		if !ok || o.Err != nil || o.Offset != end {
			return fmt.Errorf("log start offset %+v, want %d after retention.ms=1; partition files: %v",
				o, end, dirNames(filepath.Join(env.Brook.DataDir(), retTopic+"-0")))
		}
		start = o.Offset
		return nil
	})
	out, errOut = env.Tool("kafka-get-offsets.sh", "--bootstrap-server", env.Addr(), "--topic", retTopic, "--time", "-2")
	if strings.TrimSpace(out) != fmt.Sprintf("%s:0:%d", retTopic, start) {
		env.Errorf(out, errOut, "kafka-get-offsets earliest after retention: want %s:0:%d", retTopic, start)
	}

	// Refusals carry Kafka's error codes, which the tool names.
	refusals := []struct {
		name, entity, config, want string
	}{
		{"unknown config", topic, "no.such.config=1", "InvalidConfigurationException"},
		{"value of the wrong type", topic, "retention.ms=abc", "InvalidConfigurationException"},
		{"value out of range", topic, "min.insync.replicas=0", "InvalidConfigurationException"},
		{"unknown topic", "compat-no-such-topic", "retention.ms=1", "UnknownTopicOrPartitionException"},
	}
	for _, r := range refusals {
		out, errOut, err := testutil.KafkaTool(t, "kafka-configs.sh", "--bootstrap-server", env.Addr(),
			"--entity-type", "topics", "--entity-name", r.entity, "--alter", "--add-config", r.config)
		if err == nil || !strings.Contains(out+errOut, r.want) {
			env.Errorf(out, errOut, "%s: --add-config %s: err %v, want a failure naming %s", r.name, r.config, err, r.want)
		}
	}

	// The broker's own configs are described too.
	out, errOut = env.Tool("kafka-configs.sh", "--bootstrap-server", env.Addr(),
		"--entity-type", "brokers", "--entity-name", "0", "--describe", "--all")
	if got := dynamicConfigs(out)["log.retention.check.interval.ms"]; got != "500" {
		env.Errorf(out, errOut, "broker --describe --all: log.retention.check.interval.ms=%q, want 500", got)
	}
}

// dirNames lists a directory for failure messages.
func dirNames(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []string{err.Error()}
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}
