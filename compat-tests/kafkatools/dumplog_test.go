package kafkatools

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// dumpCodecs are the batch compressions written, one partition each, with
// the name kafka-dump-log prints for them.
var dumpCodecs = []struct {
	name  string
	codec kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

const (
	dumpBatches   = 8
	dumpPerBatch  = 50
	dumpPartition = dumpBatches * dumpPerBatch
)

var (
	dumpBatchLine  = regexp.MustCompile(`^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .* compresscodec: (\S+) crc: \d+ isvalid: (\S+)`)
	dumpRecordLine = regexp.MustCompile(`^\| offset: (\d+) CreateTime: \d+ keySize: \d+ valueSize: \d+ sequence: -?\d+ headerKeys: \[([^\]]*)\] key: (\S+) payload: (\S+)$`)
)

func dumpValue(p, i int) string {
	// Long enough that uncompressed batches cross index.interval.bytes (4096).
	return fmt.Sprintf("value-%d-%d-%s", p, i, strings.Repeat("x", 100))
}

// produceForDump writes dumpBatches batches of dumpPerBatch records to each
// partition, partition p compressed with dumpCodecs[p].
func produceForDump(t *testing.T, addr, topic string) {
	t.Helper()
	for p, c := range dumpCodecs {
		cl := testutil.Client(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerBatchCompression(c.codec), kgo.ProducerLinger(0))
		for b := range dumpBatches {
			var recs []*kgo.Record
			for j := range dumpPerBatch {
				i := b*dumpPerBatch + j
				recs = append(recs, &kgo.Record{
					Topic: topic, Partition: int32(p),
					Key:     fmt.Appendf(nil, "k%d-%d", p, i),
					Value:   []byte(dumpValue(p, i)),
					Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}},
				})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := cl.ProduceSync(ctx, recs...).FirstErr()
			cancel()
			if err != nil {
				t.Fatalf("produce batch %d to partition %d (%s): %v", b, p, c.name, err)
			}
		}
	}
}

func TestDumpLog(t *testing.T) {
	env := harness.Start(t, brookBin, nil)
	const topic = "compat-dump-log"
	createTopic(env, topic, len(dumpCodecs))
	produceForDump(t, env.Addr(), topic)
	// A stopped broker has trimmed and synced its indexes, as Kafka's has.
	if err := env.Brook.Stop(); err != nil {
		t.Fatalf("stop brook: %v", err)
	}

	for p, c := range dumpCodecs {
		dir := filepath.Join(env.Brook.DataDir(), fmt.Sprintf("%s-%d", topic, p))
		seg := filepath.Join(dir, "00000000000000000000")
		files := seg + ".log," + seg + ".index," + seg + ".timeindex"
		out, errOut := env.Tool("kafka-dump-log.sh", "--deep-iteration", "--print-data-log", "--files", files)
		checkDump(env, p, c.name, out, errOut)

		out, errOut = env.Tool("kafka-dump-log.sh", "--index-sanity-check", "--files", seg+".index,"+seg+".timeindex")
		// Small compressed batches never cross index.interval.bytes: an
		// empty index is what Kafka writes for them too.
		passed, empty := strings.Count(out, "passed sanity check"), strings.Count(out, " is empty.")
		if passed+empty != 2 || (c.name == "none" && passed != 2) {
			env.Errorf(out, errOut, "partition %d (%s): --index-sanity-check: %d passed, %d empty, want both passed (or empty when compressed)",
				p, c.name, passed, empty)
		}
	}
}

// checkDump verifies kafka-dump-log's reading of partition p: valid batches
// with the right codec, every record in order with its key, header and
// value, and indexes that agree with the log.
func checkDump(env *harness.Env, p int, codec, out, errOut string) {
	env.T.Helper()
	for _, bad := range []string{"Mismatches", "not found", "orrupt", "Exception", "isvalid: false"} {
		if strings.Contains(out+errOut, bad) {
			env.Errorf(out, errOut, "partition %d (%s): kafka-dump-log reports %q", p, codec, bad)
			return
		}
	}
	batches, next := 0, 0
	for _, line := range harness.Lines(out) {
		if m := dumpBatchLine.FindStringSubmatch(line); m != nil {
			batches++
			base, _ := strconv.Atoi(m[1])
			last, _ := strconv.Atoi(m[2])
			count, _ := strconv.Atoi(m[3])
			// Batches follow each other without gaps.
			if base != next || last-base+1 != count || m[4] != codec || m[5] != "true" {
				env.Errorf(out, errOut, "partition %d: batch %q: want baseOffset %d, count lastOffset-baseOffset+1, compresscodec %s, isvalid true",
					p, line, next, codec)
				return
			}
			continue
		}
		if !strings.HasPrefix(line, "| offset:") {
			continue
		}
		m := dumpRecordLine.FindStringSubmatch(line)
		want := fmt.Sprintf("| offset: %d … headerKeys: [h] key: k%d-%d payload: %s", next, p, next, dumpValue(p, next))
		if m == nil || m[1] != strconv.Itoa(next) || m[2] != "h" || m[3] != fmt.Sprintf("k%d-%d", p, next) || m[4] != dumpValue(p, next) {
			env.Errorf(out, errOut, "partition %d: record line %q, want %q", p, line, want)
			return
		}
		next++
	}
	// franz-go may split a ProduceSync call into more than one batch.
	if next != dumpPartition || batches < dumpBatches {
		env.Errorf(out, errOut, "partition %d (%s): dump shows %d records in %d batches, want %d in at least %d",
			p, codec, next, batches, dumpPartition, dumpBatches)
	}
	if codec == "none" && !regexp.MustCompile(`(?m)^offset: \d+ position: [1-9]\d*$`).MatchString(out) {
		env.Errorf(out, errOut, "partition %d: the offset index has no entry past position 0 for %d uncompressed bytes", p, dumpPartition*120)
	}
}
