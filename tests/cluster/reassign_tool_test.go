package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// reassignJSON is kafka-reassign-partitions' file format.
type reassignJSON struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string  `json:"topic"`
		Partition int32   `json:"partition"`
		Replicas  []int32 `json:"replicas"`
	} `json:"partitions"`
}

// reassignTool runs kafka-reassign-partitions of release against the
// cluster and fails the test unless it succeeds.
func (c *cluster) reassignTool(release string, args ...string) string {
	c.t.Helper()
	c.t.Setenv("BROOK_KAFKA_HOME", testutil.KafkaRelease(c.t, release))
	args = append([]string{"--bootstrap-server", c.bootstrap()}, args...)
	stdout, stderr, err := testutil.KafkaTool(c.t, "kafka-reassign-partitions.sh", args...)
	if err != nil {
		c.t.Fatalf("kafka-reassign-partitions (%s) %v: %v\nstdout: %s\nstderr: %s", release, args, err, stdout, stderr)
	}
	return stdout
}

func writeJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "reassign.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func moveFile(t *testing.T, topic string, partition int32, replicas []int32) string {
	return writeJSON(t, map[string]any{"version": 1, "partitions": []map[string]any{{"topic": topic, "partition": partition, "replicas": replicas}}})
}

// checkGenerate runs --generate for topic over brokers and checks the
// proposal: every partition, each on distinct brokers of the list.
func (c *cluster) checkGenerate(release, topic string, partitions int, brokers []int32) {
	c.t.Helper()
	topics := writeJSON(c.t, map[string]any{"version": 1, "topics": []map[string]string{{"topic": topic}}})
	out := c.reassignTool(release, "--generate", "--topics-to-move-json-file", topics, "--broker-list", strings.Trim(strings.Join(strings.Fields(fmt.Sprint(brokers)), ","), "[]"))
	_, proposed, ok := strings.Cut(out, "Proposed partition reassignment configuration")
	if !ok {
		c.t.Fatalf("--generate (%s) printed no proposal:\n%s", release, out)
	}
	var p reassignJSON
	if err := json.Unmarshal([]byte(strings.TrimSpace(proposed)), &p); err != nil {
		c.t.Fatalf("--generate (%s) proposal %q: %v", release, proposed, err)
	}
	if len(p.Partitions) != partitions {
		c.t.Errorf("--generate (%s) proposed %d partitions, want %d", release, len(p.Partitions), partitions)
	}
	for _, pp := range p.Partitions {
		if pp.Topic != topic || len(pp.Replicas) != 3 || len(slices.Compact(slices.Sorted(slices.Values(pp.Replicas)))) != 3 || slices.ContainsFunc(pp.Replicas, func(id int32) bool { return !slices.Contains(brokers, id) }) {
			c.t.Errorf("--generate (%s) proposed %+v", release, pp)
		}
	}
}

// produceBytes writes n bytes of 1 KiB records to partition 0.
func produceBytes(t *testing.T, bootstrap, topic string, n int) {
	t.Helper()
	cl := producer(t, bootstrap, kgo.ProducerBatchMaxBytes(256<<10))
	// Random, so that compression does not shrink the log.
	rng := rand.NewChaCha8([32]byte{7})
	var recs []*kgo.Record
	for range n / 1024 {
		value := make([]byte, 1024)
		_, _ = rng.Read(value)
		recs = append(recs, &kgo.Record{Topic: topic, Partition: 0, Value: value})
	}
	ctx, cancel := context.WithTimeout(context.Background(), convergeTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d bytes to %s: %v", n, topic, err)
	}
}

// logSize is the size of the partition's log on broker id.
func logSize(ctx context.Context, adm *kadm.Client, id int32, topic string, partition int32) (int64, error) {
	dirs, err := adm.DescribeBrokerLogDirs(ctx, id, kadm.TopicsSet{topic: {partition: {}}})
	if err != nil {
		return 0, err
	}
	var size int64 = -1
	dirs.EachPartition(func(d kadm.DescribedLogDirPartition) {
		if d.Topic == topic && d.Partition == partition {
			size = d.Size
		}
	})
	return size, nil
}

// reassignmentWindow polls the controller's list of reassignments of tp
// until stopped, and reports when tp was first and last seen in it: the
// span of a move, measured without the tools' JVM start-up.
type reassignmentWindow struct {
	stop              chan struct{}
	done              chan struct{}
	first             time.Time
	last              time.Time
	polls, seen, errs int
	lastErr           error
}

func watchReassignment(adm *kadm.Client, topic string, partition int32) *reassignmentWindow {
	w := &reassignmentWindow{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
			listed, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {partition: {}}})
			cancel()
			now := time.Now()
			if err == nil && len(listed) > 0 {
				if w.first.IsZero() {
					w.first = now
				}
				w.last = now
			}
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

func (w *reassignmentWindow) span() time.Duration {
	close(w.stop)
	<-w.done
	return w.last.Sub(w.first)
}

// reassignWithTool drives Kafka's kafka-reassign-partitions through
// --generate, --execute with --throttle, --verify, --list and --cancel. A
// throttled move that grows a partition's replication factor from 1 to 2
// must take long enough that its rate stays within 20% of the throttle
// (only the upper bound is tight: a loaded machine only makes it slower).
// A second move, held back by a 1 KiB/s throttle, is listed, verified as
// in progress and cancelled.
func reassignWithTool(t *testing.T, c *cluster, growTopic string, growPartitions int) {
	c.checkGenerate("kafka", growTopic, growPartitions, c.ids)
	c.checkGenerate("kafka3", growTopic, growPartitions, c.ids)

	const topic = "throttled"
	const size, rate = 4 << 20, 512 << 10
	cl := testutil.Client(t, c.bootstrap())
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*convergeTimeout)
	defer cancel()
	if res, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || res.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, res.Err)
	}
	produceBytes(t, c.bootstrap(), topic, size)
	v := c.converge(c.ids, func(v clusterView) error {
		if pv, ok := v.Partitions[tp{topic, 0}]; !ok || pv.Leader < 0 {
			return fmt.Errorf("%s-0 has no leader yet", topic)
		}
		return nil
	})
	leader := v.Partitions[tp{topic, 0}].Leader
	spare := c.others(leader)
	moved, err := logSize(ctx, adm, leader, topic, 0)
	if err != nil || moved < size {
		t.Fatalf("log of %s-0 on broker %d: %d bytes (%v), want at least %d", topic, leader, moved, err, size)
	}

	// --execute with --throttle: the tool sets the rates on the brokers and
	// the throttled replicas on the topic, then starts the move.
	// The log_dirs name each replica's dir, so the tool also sends
	// AlterReplicaLogDirs; spare[0]'s replica does not exist yet
	// (REPLICA_NOT_AVAILABLE), and the tool retries until it does.
	grow := writeJSON(t, map[string]any{"version": 1, "partitions": []map[string]any{{
		"topic": topic, "partition": 0, "replicas": []int32{leader, spare[0]},
		"log_dirs": []string{c.broker(leader).DataDir(), c.broker(spare[0]).DataDir()},
	}}})
	window := watchReassignment(adm, topic, 0)
	out := c.reassignTool("kafka", "--execute", "--reassignment-json-file", grow, "--throttle", fmt.Sprint(rate))
	if !strings.Contains(out, "Successfully started partition reassignment") {
		t.Fatalf("--execute printed:\n%s", out)
	}
	waitNoReassignments(t, cl)
	elapsed := window.span()
	got := float64(moved) / elapsed.Seconds()
	t.Logf("throttled move of %d bytes took %v: %.0f B/s against a throttle of %d B/s", moved, elapsed.Round(time.Millisecond), got, rate)
	if got > 1.2*rate || got < 0.1*rate {
		t.Errorf("throttled move at %.0f B/s, want at most 20%% above %d B/s", got, rate)
	}
	c.converge(c.ids, reassigned(map[tp][]int32{{topic, 0}: {leader, spare[0]}}))
	out = c.reassignTool("kafka", "--verify", "--reassignment-json-file", grow)
	if !strings.Contains(out, fmt.Sprintf("Reassignment of partition %s-0 is completed", topic)) || !strings.Contains(out, fmt.Sprintf("Reassignment of replica %s-0-%d completed successfully", topic, spare[0])) || !strings.Contains(out, "Clearing broker-level throttles") {
		t.Errorf("--verify after the move printed:\n%s", out)
	}
	configs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range configs {
		for _, cfg := range rc.Configs {
			if strings.HasSuffix(cfg.Key, ".replication.throttled.replicas") && cfg.MaybeValue() != "" {
				t.Errorf("%s=%q left after --verify", cfg.Key, cfg.MaybeValue())
			}
		}
	}

	// A move held back by a 1 KiB/s throttle stays in progress: --list and
	// --verify say so, and --cancel rolls it back and removes the replica
	// it added.
	third := moveFile(t, topic, 0, []int32{leader, spare[0], spare[1]})
	c.reassignTool("kafka", "--execute", "--reassignment-json-file", third, "--throttle", "1024")
	want := fmt.Sprintf("%s-0: replicas: %d,%d,%d. adding: %d.", topic, leader, spare[0], spare[1], spare[1])
	if out := c.reassignTool("kafka", "--list"); !strings.Contains(out, want) {
		t.Errorf("--list during the held-back move printed:\n%s\nwant %q", out, want)
	}
	if out := c.reassignTool("kafka3", "--verify", "--reassignment-json-file", third); !strings.Contains(out, fmt.Sprintf("Reassignment of partition %s-0 is still in progress", topic)) {
		t.Errorf("--verify (3.9) during the held-back move printed:\n%s", out)
	}
	c.reassignTool("kafka", "--cancel", "--reassignment-json-file", third)
	waitNoReassignments(t, cl)
	c.converge(c.ids, reassigned(map[tp][]int32{{topic, 0}: {leader, spare[0]}}))
	testutil.Eventually(t, convergeTimeout, func() error {
		if n, err := logSize(ctx, adm, spare[1], topic, 0); err != nil || n >= 0 {
			return fmt.Errorf("%s-0 on broker %d after --cancel: size %d (%v)", topic, spare[1], n, err)
		}
		return nil
	})

	// The ZooKeeper way of pre-2.4 tools: /admin/reassign_partitions,
	// here lowering the replication factor back to 1. The controller runs
	// it, and deletes the znode once it is done.
	zkPath := path.Join(zkChroot, "/admin/reassign_partitions")
	data := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":0,"replicas":[%d]}]}`, topic, spare[0])
	if _, err := c.zkv.conn.Create(zkPath, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", zkPath, err)
	}
	c.converge(c.ids, reassigned(map[tp][]int32{{topic, 0}: {spare[0]}}))
	testutil.Eventually(t, convergeTimeout, func() error {
		if ok, _, err := c.zkv.conn.Exists(zkPath); err != nil || ok {
			return fmt.Errorf("%s still there (%v)", zkPath, err)
		}
		return nil
	})
	if st, err := c.zkv.partitionState(topic, 0); err != nil || st.Leader != spare[0] {
		t.Errorf("state of %s-0 after the zookeeper reassignment: %+v (%v)", topic, st, err)
	}
}
