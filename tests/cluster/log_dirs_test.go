package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestLogDirFailureOnOneBroker: a broker (not the controller, so that its
// answers to the controller cross the wire) with two log dirs loses one
// (the directory is replaced by a file, which fails for root too, as a
// lost disk). Only the replicas in that dir go offline: the controller
// moves their leadership to the other brokers and lists them offline in the
// metadata, producers with acks=all keep writing to every partition, and
// Kafka's kafka-log-dirs reports the dir with its KafkaStorageException
// while the other dir still lists its partitions.
func TestLogDirFailureOnOneBroker(t *testing.T) {
	root := t.TempDir()
	dirsOf := func(id int32) []string {
		return []string{filepath.Join(root, fmt.Sprint(id), "a"), filepath.Join(root, fmt.Sprint(id), "b")}
	}
	c := startClusterEach(t, 3, map[string]string{"replica.high.watermark.checkpoint.interval.ms": "500"}, func(id int32) map[string]string {
		return map[string]string{"log.dirs": strings.Join(dirsOf(id), ",")}
	})
	const topic = "jbod"
	c.createTopic(topic, 6, nil)
	c.converge(c.ids, healthy(topic, 6, c.ids))
	victim := c.others(c.controller())[0]
	dirs := dirsOf(victim)
	// Which of broker 1's replicas are in the dir that fails.
	var lost []int32
	for p := range int32(6) {
		if _, err := os.Stat(filepath.Join(dirs[0], fmt.Sprintf("%s-%d", topic, p))); err == nil {
			lost = append(lost, p)
		}
	}
	if len(lost) == 0 || len(lost) == 6 {
		t.Fatalf("broker %d has %d of 6 partitions in %s; want some in each dir", victim, len(lost), dirs[0])
	}
	if err := os.Rename(dirs[0], dirs[0]+".gone"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dirs[0], []byte("disk gone"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.converge(c.ids, func(v clusterView) error {
		for p := range int32(6) {
			pv := v.Partitions[tp{topic, p}]
			inLost := slices.Contains(lost, p)
			if inLost && (pv.Leader == victim || slices.Contains(pv.ISR, victim)) {
				return fmt.Errorf("partition %d still has broker %d: %+v", p, victim, pv)
			}
			if !inLost && !slices.Contains(pv.ISR, victim) {
				return fmt.Errorf("partition %d lost broker %d from its ISR: %+v", p, victim, pv)
			}
		}
		return nil
	})

	cl := testutil.Client(t, c.bootstrap(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for p := range int32(6) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("after")}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}

	out, errOut, err := testutil.KafkaTool(t, "kafka-log-dirs.sh", "--bootstrap-server", c.bootstrap(), "--describe", "--broker-list", fmt.Sprint(victim), "--topic-list", topic)
	if err != nil {
		t.Fatalf("kafka-log-dirs: %v\n%s", err, errOut)
	}
	var doc struct {
		Brokers []struct {
			Broker  int32
			LogDirs []struct {
				LogDir     string
				Error      *string
				Partitions []struct{ Partition string }
			}
		}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &doc); err != nil || len(doc.Brokers) != 1 {
		t.Fatalf("kafka-log-dirs output: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, d := range doc.Brokers[0].LogDirs {
		e := ""
		if d.Error != nil {
			e = *d.Error
		}
		got[d.LogDir] = fmt.Sprintf("%d partitions, error %q", len(d.Partitions), e)
		if d.LogDir == dirs[0] && (d.Error == nil || !strings.Contains(*d.Error, "KafkaStorageException") || len(d.Partitions) != 0) {
			t.Fatalf("failed dir: %s", got[d.LogDir])
		}
		if d.LogDir == dirs[1] && (d.Error != nil || len(d.Partitions) != 6-len(lost)) {
			t.Fatalf("healthy dir: %s, want %d partitions", got[d.LogDir], 6-len(lost))
		}
	}
	if len(got) != 2 {
		t.Fatalf("log dirs %v", got)
	}
	t.Logf("kafka-log-dirs: %v", got)
}
