package compaction

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/internal/testutil"
)

const (
	offsetsGroups     = 10
	offsetsTopicParts = 4
	offsetsSegBytes   = 16 << 10
	// minCommitRecord is less than any offset commit record of this test
	// takes in a batch (key: version, group, topic, partition; value:
	// version, offset, epoch, metadata, timestamp), so bytes / this bounds
	// the records a coordinator replays.
	minCommitRecord = 50
)

// TestConsumerOffsetsBounded commits offsets for 10 groups over and over
// (COMPACTION_COMMITS in all, 100000 by default, about 30 s; make soak-offsets runs
// 1,000,000) and checks that __consumer_offsets stays within a few
// segments no matter how many commits were made, because the cleaner
// keeps only each group-partition's latest; and that after kill -9 the
// coordinator reloads the latest offsets from that bounded log.
func TestConsumerOffsetsBounded(t *testing.T) {
	commits := 100000
	if s := os.Getenv("COMPACTION_COMMITS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < offsetsGroups {
			t.Fatalf("COMPACTION_COMMITS=%q: want a number >= %d", s, offsetsGroups)
		}
		commits = v
	}
	b := testutil.StartBrook(t, brookBin, map[string]string{
		"offsets.topic.segment.bytes":  strconv.Itoa(offsetsSegBytes),
		"offsets.topic.num.partitions": "8",
		"log.cleaner.backoff.ms":       "50",
	})
	adm := kadm.NewClient(testutil.Client(t, b.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	const topic = "orders"
	if _, err := adm.CreateTopic(ctx, offsetsTopicParts, 1, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}

	// Each group commits all partitions of the topic, each commit with
	// larger offsets: group g's i-th commit is offset i*10+partition.
	perGroup := commits / offsetsGroups
	start := time.Now()
	errs := make(chan error, offsetsGroups)
	for g := range offsetsGroups {
		go func() { errs <- commitMany(ctx, adm, g, perGroup) }()
	}
	for range offsetsGroups {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d commits of %d partitions by %d groups in %v", perGroup*offsetsGroups, offsetsTopicParts, offsetsGroups, time.Since(start).Round(time.Millisecond))

	// The cleaner keeps one record per group-partition below the active
	// segment; what is not cleaned yet is at most the active segment and
	// the one that just rolled, per __consumer_offsets partition in use.
	used := usedOffsetsPartitions(t, b.DataDir())
	groupPartitions := offsetsGroups * offsetsTopicParts
	maxBytes := int64(used)*2*offsetsSegBytes + int64(groupPartitions)*4*200
	var size int64
	testutil.Eventually(t, 2*time.Minute, func() error {
		size = consumerOffsetsBytes(t, b.DataDir())
		if size > maxBytes {
			return fmt.Errorf("__consumer_offsets holds %d bytes in %d partitions, want at most %d", size, used, maxBytes)
		}
		return nil
	})
	t.Logf("__consumer_offsets: %d bytes of .log in %d partitions (bound %d) after %d commits", size, used, maxBytes, perGroup*offsetsGroups)
	adm.Close()

	// What a coordinator replays after a crash is what is on disk: at
	// most size/minCommitRecord records, however many commits were made.
	b.Kill9()
	replayed := consumerOffsetsBytes(t, b.DataDir())
	if replayed > maxBytes {
		t.Fatalf("the coordinator would replay %d bytes, want at most %d", replayed, maxBytes)
	}
	b.Restart()
	cl := testutil.Client(t, b.Addr())
	adm = kadm.NewClient(cl)
	records := countConsumerOffsetsRecords(t, b.Addr())
	if maxRecords := int(maxBytes / minCommitRecord); records > maxRecords {
		t.Fatalf("__consumer_offsets holds %d records after %d commits, want at most %d", records, perGroup*offsetsGroups*offsetsTopicParts, maxRecords)
	}
	t.Logf("the coordinator replayed %d records (%d commits of %d offsets were made)", records, perGroup*offsetsGroups, offsetsTopicParts)
	for g := range offsetsGroups {
		group := fmt.Sprintf("group-%d", g)
		var got kadm.OffsetResponses
		testutil.Eventually(t, time.Minute, func() error {
			var err error
			got, err = adm.FetchOffsets(ctx, group)
			if err == nil {
				err = got.Error()
			}
			return err
		})
		for p := range int32(offsetsTopicParts) {
			o, ok := got.Lookup(topic, p)
			if want := int64(perGroup*10) + int64(p); !ok || o.At != want {
				t.Errorf("%s partition %d: offset %d (found %v) after restart, want %d", group, p, o.At, ok, want)
			}
		}
	}

	// Kafka's own kafka-log-dirs (DescribeLogDirs) sees the shrunk topic.
	if reported := logDirsSize(t, b.Addr(), "__consumer_offsets"); reported <= 0 || reported > maxBytes {
		t.Errorf("kafka-log-dirs reports %d bytes for __consumer_offsets, want 1..%d", reported, maxBytes)
	} else {
		t.Logf("kafka-log-dirs reports %d bytes for __consumer_offsets", reported)
	}
}

// logDirsSize runs kafka-log-dirs --describe for topic and returns the
// sum of the partition sizes it reports.
func logDirsSize(t *testing.T, addr, topic string) int64 {
	t.Helper()
	out, errOut, err := testutil.KafkaTool(t, "kafka-log-dirs.sh", "--bootstrap-server", addr, "--describe", "--topic-list", topic)
	if err != nil {
		t.Fatalf("kafka-log-dirs: %v\n%s\n%s", err, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var doc struct {
		Brokers []struct {
			LogDirs []struct {
				Partitions []struct {
					Partition string
					Size      int64
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &doc); err != nil {
		t.Fatalf("kafka-log-dirs: last line is not its JSON report: %v\n%s", err, out)
	}
	var n int64
	for _, br := range doc.Brokers {
		for _, d := range br.LogDirs {
			for _, p := range d.Partitions {
				n += p.Size
			}
		}
	}
	return n
}

// commitMany makes group-g's n commits of every partition of "orders",
// the i-th with offset i*10+partition.
func commitMany(ctx context.Context, adm *kadm.Client, g, n int) error {
	group := fmt.Sprintf("group-%d", g)
	for i := 1; i <= n; i++ {
		var os kadm.Offsets
		for p := range int32(offsetsTopicParts) {
			os.Add(kadm.Offset{Topic: "orders", Partition: p, At: int64(i*10) + int64(p), LeaderEpoch: -1})
		}
		if err := adm.CommitAllOffsets(ctx, group, os); err != nil {
			return fmt.Errorf("%s commit %d: %w", group, i, err)
		}
	}
	return nil
}

// usedOffsetsPartitions counts the __consumer_offsets partitions with
// records.
func usedOffsetsPartitions(t *testing.T, dataDir string) int {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(dataDir, "__consumer_offsets-*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if logBytes(t, d) > 0 {
			n++
		}
	}
	return n
}

// consumerOffsetsBytes is the size of __consumer_offsets' .log files.
func consumerOffsetsBytes(t *testing.T, dataDir string) int64 {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(dataDir, "__consumer_offsets-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no __consumer_offsets partitions on disk")
	}
	var n int64
	for _, d := range dirs {
		n += logBytes(t, d)
	}
	return n
}

// countConsumerOffsetsRecords reads every __consumer_offsets partition
// with data from its start to its end offset and counts the records.
func countConsumerOffsetsRecords(t *testing.T, addr string) int {
	t.Helper()
	adm := kadm.NewClient(testutil.Client(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, "__consumer_offsets")
	if err != nil || ends.Error() != nil {
		t.Fatalf("list __consumer_offsets end offsets: %v %v", err, ends.Error())
	}
	want := map[int32]int64{}
	assign := map[string]map[int32]kgo.Offset{"__consumer_offsets": {}}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			assign["__consumer_offsets"][o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	reader := testutil.Client(t, addr, kgo.ConsumePartitions(assign))
	next := map[int32]int64{}
	var mu sync.Mutex
	n := 0
	for !caughtUp(next, want) {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read __consumer_offsets: reached %v of %v", next, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			mu.Lock()
			defer mu.Unlock()
			next[r.Partition] = r.Offset + 1
			n++
		})
	}
	return n
}
