package log

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
)

// TestKafkaDumpLogReadsSegments runs Apache Kafka's kafka-dump-log
// (DumpLogSegments) over Brook's .log, .index, .timeindex and snapshot-free
// files: it must decode every batch and record with the offsets, epochs and
// timestamps Brook assigned, and find the indexes consistent.
func TestKafkaDumpLogReadsSegments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dump-0")
	clock := newManualClock()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 16 << 10
	cfg.IndexIntervalBytes = 1024
	l := openTestLog(t, dir, cfg, clock, Options{TopicID: [16]byte{7}})
	codecs := batch.MustCodecs()
	ts := clock.Now().UnixMilli()
	rng := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 60; i++ {
		var recs []batch.Record
		for j := 0; j < 4; j++ {
			recs = append(recs, batch.Record{TimestampDelta: int64(j), OffsetDelta: int32(j), Key: []byte(fmt.Sprintf("k%d", j)), Value: randomBytes(rng, 300)})
		}
		codec := []batch.Compression{batch.None, batch.Gzip, batch.Snappy, batch.LZ4, batch.Zstd}[i%5]
		b, err := batch.Build(batch.BuildOptions{BaseTimestamp: ts + int64(i), Compression: codec, PartitionLeaderEpoch: -1,
			Producer: &batch.Producer{ID: 42, Epoch: 1, BaseSequence: int32(4 * i)}}, recs, codecs)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, b, 3)
	}
	if l.NumSegments() < 3 {
		t.Fatalf("want several segments, got %d", l.NumSegments())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := []string{
		offsetFileName(dir, 0, logSuffix), offsetFileName(dir, 0, indexSuffix), offsetFileName(dir, 0, timeIndexSuffix),
	}
	out, stderr, err := testutil.KafkaTool(t, "kafka-dump-log.sh", "--deep-iteration", "--index-sanity-check", "--files", strings.Join(files, ","))
	if err != nil {
		t.Fatalf("kafka-dump-log: %v\n%s\n%s", err, stderr, out)
	}
	if n := strings.Count(out, "passed sanity check"); n != 2 {
		t.Fatalf("index sanity checks passed: %d of 2:\n%s", n, out)
	}
	// Without --index-sanity-check the tool dumps the index entries and
	// reports any that disagree with the log.
	idx, stderr, err := testutil.KafkaTool(t, "kafka-dump-log.sh", "--files", strings.Join(files[1:], ","))
	if err != nil {
		t.Fatalf("kafka-dump-log on indexes: %v\n%s", err, stderr)
	}
	for _, bad := range []string{"Mismatch", "mismatch", "corrupt", "Exception"} {
		if strings.Contains(out+idx+stderr, bad) {
			t.Fatalf("kafka-dump-log reports %q:\n%s\n%s\n%s", bad, out, idx, stderr)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^offset: \d+ position: \d+$`).FindAllString(idx, -1)); n == 0 {
		t.Fatalf("no offset index entries dumped:\n%s", idx)
	}
	if n := len(regexp.MustCompile(`(?m)^timestamp: \d+ offset: \d+$`).FindAllString(idx, -1)); n == 0 {
		t.Fatalf("no time index entries dumped:\n%s", idx)
	}
	batches := regexp.MustCompile(`(?m)^baseOffset: (\d+) lastOffset: (\d+) count: 4 baseSequence: (\d+) lastSequence: \d+ producerId: 42 producerEpoch: 1 partitionLeaderEpoch: 3 isTransactional: false isControl: false`).FindAllStringSubmatch(out, -1)
	if len(batches) == 0 {
		t.Fatalf("no batches recognised in:\n%s", out)
	}
	for i, m := range batches {
		if m[1] != fmt.Sprint(4*i) || m[2] != fmt.Sprint(4*i+3) || m[3] != fmt.Sprint(4*i) {
			t.Fatalf("batch %d: %v", i, m)
		}
	}
	if n := strings.Count(out, "| offset: "); n != 4*len(batches) {
		t.Fatalf("%d records for %d batches:\n%s", n, len(batches), out)
	}
	t.Logf("kafka-dump-log decoded %d batches of the first segment; indexes:\n%s", len(batches), idx)
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// TestKafkaDumpLogReadsTxnIndex runs kafka-dump-log over a segment with
// transactions and its .txnindex: Kafka must parse Brook's markers as
// end-transaction control records and list the aborted transactions Brook
// indexed.
func TestKafkaDumpLogReadsTxnIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dump-0")
	l := openTestLog(t, dir, DefaultConfig(), newManualClock(), Options{})
	ops := []txnOp{
		dataOp(7, 1, 0, 2, true), dataOp(8, 0, 0, 1, true), markerOp(7, 1, 3, false),
		dataOp(-1, -1, -1, 1, false), markerOp(8, 0, 4, true), dataOp(7, 1, 2, 3, true), markerOp(7, 1, 5, false),
	}
	for _, op := range ops {
		mustOp(t, l, op)
	}
	want := l.AbortedTransactions(0, l.LogEndOffset())
	if len(want) != 2 {
		t.Fatalf("aborted: %+v", want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := offsetFileName(dir, 0, txnIndexSuffix) + "," + offsetFileName(dir, 0, logSuffix)
	out, stderr, err := testutil.KafkaTool(t, "kafka-dump-log.sh", "--deep-iteration", "--files", files)
	if err != nil {
		t.Fatalf("kafka-dump-log: %v\n%s\n%s", err, stderr, out)
	}
	if strings.Contains(out+stderr, "Exception") {
		t.Fatalf("kafka-dump-log failed:\n%s\n%s", out, stderr)
	}
	var got []AbortedTxn
	for _, m := range regexp.MustCompile(`(?m)^version: 0 producerId: (\d+) firstOffset: (\d+) lastOffset: (\d+) lastStableOffset: (\d+)$`).FindAllStringSubmatch(out, -1) {
		var a AbortedTxn
		fmt.Sscan(m[1]+" "+m[2]+" "+m[3]+" "+m[4], &a.ProducerID, &a.FirstOffset, &a.LastOffset, &a.LastStableOffset)
		got = append(got, a)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("kafka-dump-log lists %+v, Brook indexed %+v:\n%s", got, want, out)
	}
	markers := regexp.MustCompile(`(?m)producerId: (\d+) producerEpoch: (\d+) .*isTransactional: true isControl: true.*\n.*endTxnMarker: (ABORT|COMMIT) coordinatorEpoch: (\d+)`).FindAllStringSubmatch(out, -1)
	if len(markers) != 3 {
		t.Fatalf("%d end-transaction markers recognised, want 3:\n%s", len(markers), out)
	}
	for i, w := range [][]string{{"7", "1", "ABORT", "3"}, {"8", "0", "COMMIT", "4"}, {"7", "1", "ABORT", "5"}} {
		if fmt.Sprint(markers[i][1:]) != fmt.Sprint(w) {
			t.Fatalf("marker %d: %v, want %v:\n%s", i, markers[i][1:], w, out)
		}
	}
	t.Logf("kafka-dump-log:\n%s", out)
}
