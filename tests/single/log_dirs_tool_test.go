package single

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestReassignLogDirsWithKafkaTools moves a partition's replica between the
// two log dirs of one broker as an operator does, with Kafka's tools of
// 4.x and 3.9: kafka-reassign-partitions --execute with a "log_dirs" for
// the replica (which sends AlterReplicaLogDirs: the broker copies the
// replica into a future replica in the new dir, then swaps), --verify
// until it reports the move complete, kafka-log-dirs --describe showing
// the partition in the new dir only; the records stay readable in order.
func TestReassignLogDirsWithKafkaTools(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	p := testutil.StartBrook(t, brookBin, map[string]string{"log.dirs": strings.Join(dirs, ",")})
	const topic = "moving"
	createTopic(t, p.Addr(), topic, 1)
	want := produceAcked(t, p.Addr(), topic, 2000)

	for _, release := range []string{"kafka", "kafka3"} {
		t.Setenv("BROOK_KAFKA_HOME", testutil.KafkaRelease(t, release))
		from, to := dirs[0], dirs[1]
		if _, err := os.Stat(filepath.Join(to, topic+"-0")); err == nil {
			from, to = to, from
		}
		plan := map[string]any{"version": 1, "partitions": []map[string]any{
			{"topic": topic, "partition": 0, "replicas": []int32{0}, "log_dirs": []string{to}},
		}}
		data, err := json.Marshal(plan)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "reassign.json")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tool := func(name string, args ...string) (string, error) {
			stdout, stderr, err := testutil.KafkaTool(t, name, append([]string{"--bootstrap-server", p.Addr()}, args...)...)
			if err != nil {
				return stdout, fmt.Errorf("%s (%s): %w\nstdout: %s\nstderr: %s", name, release, err, stdout, stderr)
			}
			return stdout, nil
		}
		if _, err := tool("kafka-reassign-partitions.sh", "--execute", "--reassignment-json-file", file); err != nil {
			t.Fatalf("%v\n--- brook log ---\n%s", err, p.LogTail(30))
		}
		testutil.Eventually(t, 2*time.Minute, func() error {
			out, err := tool("kafka-reassign-partitions.sh", "--verify", "--reassignment-json-file", file)
			if err != nil {
				return err
			}
			// The partition's line says "is completed" at once (its
			// replicas did not change); the replica's says where it is.
			if !strings.Contains(out, "Reassignment of replica "+topic+"-0-0 completed successfully") {
				return fmt.Errorf("--verify (%s):\n%s", release, out)
			}
			return nil
		})
		out, err := tool("kafka-log-dirs.sh", "--describe", "--broker-list", "0", "--topic-list", topic)
		if err != nil {
			t.Fatal(err)
		}
		inDir := logDirsOf(t, out, topic+"-0")
		if len(inDir) != 1 || inDir[0] != to {
			t.Fatalf("kafka-log-dirs (%s): %s in %v, want only %s (moved from %s)\n%s", release, topic+"-0", inDir, to, from, out)
		}
		readAll(t, p.Addr(), topic, want)
	}
}

// logDirsOf parses kafka-log-dirs --describe's JSON and returns the dirs
// that hold partition (as "topic-N"), the future replica's included.
func logDirsOf(t *testing.T, out, partition string) []string {
	t.Helper()
	var desc struct {
		Brokers []struct {
			LogDirs []struct {
				LogDir     string `json:"logDir"`
				Error      any    `json:"error"`
				Partitions []struct {
					Partition string `json:"partition"`
					IsFuture  bool   `json:"isFuture"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	_, js, ok := strings.Cut(out, "\n{")
	if !ok {
		t.Fatalf("kafka-log-dirs printed no JSON:\n%s", out)
	}
	if err := json.Unmarshal([]byte("{"+js), &desc); err != nil {
		t.Fatalf("kafka-log-dirs JSON: %v\n%s", err, out)
	}
	var dirs []string
	for _, b := range desc.Brokers {
		for _, d := range b.LogDirs {
			for _, p := range d.Partitions {
				if p.Partition == partition {
					dirs = append(dirs, d.LogDir)
				}
			}
		}
	}
	return dirs
}
