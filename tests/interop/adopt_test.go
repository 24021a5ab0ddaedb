package interop

import (
	"fmt"
	"io"
	stdlog "log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	zkclient "github.com/go-zookeeper/zk"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestAdopt hands one log dir back and forth between Kafka 3.9 and Brook,
// both as broker 1 of the same ZooKeeper on the same port:
//
//  1. Kafka writes every kind of data (codecs, an idempotent producer, a
//     transactional one with an abort, a compacted topic with cleaned and
//     deleted segments) and stops cleanly; Brook opens the dir.
//  2. Brook writes the same kinds, and a topic it creates, and stops;
//     Kafka opens the dir.
//  3. Kafka writes again, leaves a transaction open and is killed
//     (kill -9); Brook recovers the dir.
//  4. Brook writes again, leaves a transaction open and is killed; Kafka
//     recovers the dir.
//
// After each hand-over the new broker must serve every batch byte for byte
// at its offset, read_uncommitted and read_committed, report the same
// producers (DescribeProducers), and continue the idempotent producer's
// sequence: a resent last batch is a duplicate, a gap is refused, the next
// batch is appended. After a kill the transaction left open must hold the
// last stable offset at its first record, and the new broker's
// coordinator must abort it and go on. Kafka's DumpLogSegments checks the
// indexes Brook wrote, after its clean stop and after its kill.
func TestAdopt(t *testing.T) {
	zk := testutil.StartZooKeeper(t)
	dir := t.TempDir()
	port := testutil.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	props := map[string]string{
		"broker.id":                                     "1",
		"log.dirs":                                      dir,
		"zookeeper.connect":                             zk.Connect(),
		"offsets.topic.replication.factor":              "1",
		"offsets.topic.num.partitions":                  "1",
		"transaction.state.log.replication.factor":      "1",
		"transaction.state.log.min.isr":                 "1",
		"transaction.state.log.num.partitions":          "1",
		"auto.create.topics.enable":                     "false",
		"log.cleaner.backoff.ms":                        "200",
		"log.cleaner.dedupe.buffer.size":                "2097152",
		"log.retention.check.interval.ms":               "500",
		"log.flush.offset.checkpoint.interval.ms":       "500",
		"log.flush.start.offset.checkpoint.interval.ms": "500",
		"log.segment.delete.delay.ms":                   "500",
		// Brook, started after a kill -9 of Kafka, waits for Kafka's
		// ZooKeeper session to expire before it registers broker 1.
		"zookeeper.session.timeout.ms": "6000",
	}
	brookProps := maps.Clone(props)
	brookProps["listeners"] = fmt.Sprintf("PLAINTEXT://%s", addr)

	// The raw requests (Fetch v12 by topic name, DescribeProducers) need
	// versions both brokers serve.
	cl := testutil.Client(t, addr, kgo.MaxVersions(kversion.V3_0_0()))

	start := time.Now()
	t.Log("1. Kafka 3.9 writes, stops cleanly; Brook adopts the dir")
	kafka := testutil.StartKafka39(t, props, port)
	createTopics(t, cl, kafkaTopics...)
	idem := newIdemProducer(t, cl)
	committed := writeRound(t, addr, cl, idem, 1, false)
	waitSettled(t, cl, dir)
	want := views(t, cl, kafkaTopics)
	_ = kafka.Stop() // Kafka exits 143 on SIGTERM
	requireFile(t, filepath.Join(dir, ".kafka_cleanshutdown"))
	brook := testutil.StartBrook(t, brookBin, brookProps)
	checkAll(t, cl, addr, "Brook (Kafka stopped cleanly)", want, committed, idem)

	t.Logf("(%v) 2. Brook writes, stops; Kafka 3.9 opens the dir", time.Since(start).Round(time.Second))
	committed = append(committed, writeRound(t, addr, cl, idem, 2, false)...)
	waitSettled(t, cl, dir)
	want = views(t, cl, append(slices.Clone(kafkaTopics), topicBrook))
	if err := brook.Stop(); err != nil {
		t.Fatalf("stop brook: %v", err)
	}
	checkDump(t, dir, "Brook (stopped)", append(slices.Clone(kafkaTopics), topicBrook), false)
	if err := kafka.Start(); err != nil {
		t.Fatalf("start kafka again: %v\n%s", err, kafka.LogTail(60))
	}
	checkAll(t, cl, addr, "Kafka 3.9 (on Brook's dir)", want, committed, idem)

	t.Logf("(%v) 3. Kafka 3.9 writes, leaves a transaction open, is killed; Brook recovers the dir", time.Since(start).Round(time.Second))
	committed = append(committed, writeRound(t, addr, cl, idem, 3, false)...)
	open := openTxn(t, addr, 3)
	waitSettled(t, cl, dir)
	want = views(t, cl, append(slices.Clone(kafkaTopics), topicBrook))
	open.checkOpen(t, "Kafka 3.9", want[topicTxn])
	kafka.Kill9()
	open.Close()
	if err := brook.Start(); err != nil {
		t.Fatalf("start brook again: %v\n%s", err, brook.LogTail(60))
	}
	checkAll(t, cl, addr, "Brook (Kafka killed)", want, committed, idem)
	committed = abortOpen(t, cl, addr, "Brook (Kafka killed)", committed, open.first)

	t.Logf("(%v) 4. Brook writes, leaves a transaction open, is killed; Kafka 3.9 recovers the dir", time.Since(start).Round(time.Second))
	committed = append(committed, writeRound(t, addr, cl, idem, 4, true)...)
	open = openTxn(t, addr, 4)
	waitSettled(t, cl, dir)
	all := append(slices.Clone(kafkaTopics), topicBrook)
	want = views(t, cl, all)
	open.checkOpen(t, "Brook", want[topicTxn])
	brook.Kill9()
	open.Close()
	checkDump(t, dir, "Brook (killed)", all, true)
	// A Kafka broker exits on start while its id is still registered by
	// the killed broker's session (docs/migration.md): wait it out.
	waitUnregistered(t, zk.Connect(), 1)
	if err := kafka.Start(); err != nil {
		t.Fatalf("start kafka again: %v\n%s", err, kafka.LogTail(60))
	}
	checkAll(t, cl, addr, "Kafka 3.9 (Brook killed)", want, committed, idem)
	committed = abortOpen(t, cl, addr, "Kafka 3.9 (Brook killed)", committed, open.first)
	t.Logf("(%v) done", time.Since(start).Round(time.Second))
}

// views records what the broker serves of the topics written so far.
func views(t *testing.T, cl *kgo.Client, topics []string) map[string]partitionView {
	t.Helper()
	out := map[string]partitionView{}
	for _, topic := range topics {
		out[topic] = serve(t, cl, topic)
	}
	return out
}

// checkAll checks what the broker now at addr (who) serves against want,
// the read_committed view of the transactional topic, and the idempotent
// producer's continuation.
func checkAll(t *testing.T, cl *kgo.Client, addr, who string, want map[string]partitionView, committed []string, idem *idemProducer) {
	t.Helper()
	checkServes(t, cl, who, want)
	if got := committedKeys(t, cl, addr); !slices.Equal(got, committed) {
		t.Errorf("%s: read_committed %s has keys\n  %v\nwant\n  %v", who, topicTxn, got, committed)
	}
	idem.checkContinues(t, cl, who)
}

func requireFile(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("want %s: %v", path, err)
	}
}

// waitUnregistered waits until /brokers/ids/<id> is gone: the session of
// a killed broker expired.
func waitUnregistered(t *testing.T, connect string, id int) {
	t.Helper()
	conn, _, err := zkclient.Connect([]string{connect}, 10*time.Second,
		zkclient.WithLogInfo(false), zkclient.WithLogger(stdlog.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatalf("connect to zookeeper: %v", err)
	}
	defer conn.Close()
	testutil.Eventually(t, 2*time.Minute, func() error {
		ok, _, err := conn.Exists(fmt.Sprintf("/brokers/ids/%d", id))
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("broker %d still registered", id)
		}
		return nil
	})
}
