package log

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
)

// TestKafkaDumpLogReadsCleanedSegments runs Apache Kafka's kafka-dump-log
// over a segment the cleaner rewrote: rebuilt batches (gzip among them),
// a tombstone's batch carrying its delete horizon and a producer's emptied
// last batch must decode, the indexes must pass Kafka's sanity check, and
// the records must be the latest value of each key.
func TestKafkaDumpLogReadsCleanedSegments(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dump-0")
	clock := newManualClock()
	cfg := compactConfig()
	cfg.SegmentBytes = 64 << 10
	l := openTestLog(t, dir, cfg, clock, Options{})
	ts := clock.Now().UnixMilli()
	b, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: ts,
		Producer: &batch.Producer{ID: 42, Epoch: 1, BaseSequence: 0}}, []batch.Record{{Key: []byte("p"), Value: []byte("old")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(b, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		codec := []batch.Compression{batch.None, batch.Gzip}[i%2]
		appendKVs(t, l, ts+int64(i), codec, kv{key: fmt.Sprint("k", i%4), value: fmt.Sprint("v", i)}, kv{key: "p", value: fmt.Sprint("p", i)})
	}
	appendKVs(t, l, ts+50, batch.None, kv{key: "k0", tombstone: true})
	l.appendMu.Lock()
	err = l.rollLocked()
	l.appendMu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	cleanNow(t, l, 1<<20)
	horizon := clock.Now().UnixMilli() + cfg.DeleteRetentionMs
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files := []string{offsetFileName(dir, 0, logSuffix), offsetFileName(dir, 0, indexSuffix), offsetFileName(dir, 0, timeIndexSuffix)}
	out, stderr, err := testutil.KafkaTool(t, "kafka-dump-log.sh", "--deep-iteration", "--print-data-log", "--index-sanity-check", "--files", strings.Join(files, ","))
	if err != nil {
		t.Fatalf("kafka-dump-log: %v\n%s\n%s", err, stderr, out)
	}
	if n := strings.Count(out, "passed sanity check"); n != 2 {
		t.Fatalf("index sanity checks passed: %d of 2:\n%s", n, out)
	}
	for _, bad := range []string{"Mismatch", "mismatch", "corrupt", "Exception"} {
		if strings.Contains(out+stderr, bad) {
			t.Fatalf("kafka-dump-log reports %q:\n%s\n%s", bad, out, stderr)
		}
	}
	// The producer's batch at offset 0 lost its only record and stays empty.
	if !regexp.MustCompile(`(?m)^baseOffset: 0 lastOffset: 0 count: 0 baseSequence: 0 lastSequence: 0 producerId: 42 producerEpoch: 1 `).MatchString(out) {
		t.Fatalf("no empty batch for producer 42 at offset 0:\n%s", out)
	}
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)\| offset: \d+ .*key: (\S+)(?: payload: (\S*))?`).FindAllStringSubmatch(out, -1) {
		got[m[1]] = m[2]
	}
	want := map[string]string{"k0": "", "k1": "v37", "k2": "v38", "k3": "v39", "p": "p39"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("records %v, want %v:\n%s", got, want, out)
	}
	if !strings.Contains(out, fmt.Sprint(horizon)) {
		t.Fatalf("the tombstone's delete horizon %d is not shown:\n%s", horizon, out)
	}
	t.Logf("kafka-dump-log:\n%s", out)
}
