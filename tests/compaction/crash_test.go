package compaction

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
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
	crashTopic      = "compacted-crash"
	crashPartitions = 2
	crashKeys       = 300
	// crashPerRound caps what one round writes, so the log stays small
	// enough to read back quickly even on a fast machine.
	crashPerRound = 200000
)

// TestCrashWhileCleaning kills the broker with -9 at seeded random moments
// while a producer (acks=all, idempotent) overwrites keys of a compacted
// topic whose small segments the cleaner rewrites all the time. After each
// restart every key must read back its last acknowledged value or a later
// one, with offsets strictly increasing; after a final full clean no key
// appears twice below the cleaner checkpoint, and Kafka's kafka-dump-log
// decodes every segment and passes every index's sanity check.
// COMPACTION_SEED replays a schedule, COMPACTION_ROUNDS changes its length.
func TestCrashWhileCleaning(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("COMPACTION_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("COMPACTION_SEED: %v", err)
		}
		seed = v
	}
	rounds := 8
	if s := os.Getenv("COMPACTION_ROUNDS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("COMPACTION_ROUNDS=%q: want a positive number", s)
		}
		rounds = v
	}
	t.Logf("seed %d (COMPACTION_SEED=%d replays it), %d rounds", seed, seed, rounds)
	rng := rand.New(rand.NewPCG(seed, seed))

	b := testutil.StartBrook(t, brookBin, map[string]string{
		"log.cleaner.backoff.ms": "20",
		"num.partitions":         "1",
	})
	adm := kadm.NewClient(testutil.Client(t, b.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	segBytes := "16384"
	cfg := map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             &segBytes,
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
		"index.interval.bytes":      kadm.StringPtr("1024"),
	}
	if _, err := adm.CreateTopic(ctx, crashPartitions, 1, cfg, crashTopic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	adm.Close()

	w := &crashWriter{acked: map[string]int64{}}
	for round := range rounds {
		killAfter := time.Duration(200+rng.IntN(1500)) * time.Millisecond
		w.round(t, b.Addr(), killAfter, b.Kill9)
		t.Logf("round %d: killed after %v; %d sent so far", round, killAfter, w.sent)
		b.Restart()
		w.verify(t, b.Addr())
	}

	// A full clean: fill the active segments until they roll, then wait
	// until the checkpoint of each partition reaches its active segment.
	w.fill(t, b.Addr())
	var cps map[int32]int64
	testutil.Eventually(t, 2*time.Minute, func() error {
		cps = cleanerCheckpoint(t, b.DataDir(), crashTopic)
		for p := range int32(crashPartitions) {
			_, active := segmentFiles(t, partitionDir(b.DataDir(), crashTopic, p))
			if cps[p] < active || active <= 0 {
				return fmt.Errorf("partition %d: cleaner checkpoint %d, active segment %d", p, cps[p], active)
			}
		}
		return nil
	})
	latest := w.verify(t, b.Addr())
	defer func() {
		if t.Failed() {
			for p := range int32(crashPartitions) {
				t.Logf("partition %d after a full clean (checkpoint %d):\n%s", p, cps[p], listing(t, partitionDir(b.DataDir(), crashTopic, p)))
			}
		}
	}()
	for p := range int32(crashPartitions) {
		seen := map[string]int64{}
		for _, r := range latest.records[p] {
			if r.Offset >= cps[p] {
				break
			}
			if prev, dup := seen[string(r.Key)]; dup {
				t.Errorf("partition %d: key %s at offsets %d and %d, both below the cleaner checkpoint %d", p, r.Key, prev, r.Offset, cps[p])
			}
			seen[string(r.Key)] = r.Offset
		}
	}
	if n := strings.Count(readFile(t, b.LogPath()), "log cleaner: cleaned"); n < rounds {
		t.Errorf("the cleaner ran %d times in %d rounds; the test did not exercise it", n, rounds)
	}

	// kafka-dump-log on the files as a clean shutdown leaves them.
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	var files []string
	indexes := 0
	for p := range int32(crashPartitions) {
		fs, _ := segmentFiles(t, partitionDir(b.DataDir(), crashTopic, p))
		for _, f := range fs {
			if !strings.HasSuffix(f, ".log") {
				indexes++
			}
		}
		files = append(files, fs...)
	}
	out, stderr, err := testutil.KafkaTool(t, "kafka-dump-log.sh", "--deep-iteration", "--index-sanity-check", "--files", strings.Join(files, ","))
	if err != nil {
		t.Fatalf("kafka-dump-log: %v\n%s\n%s", err, stderr, out)
	}
	// An index with no entries (a segment smaller than
	// index.interval.bytes) is reported as empty instead of checked.
	if n := strings.Count(out, "passed sanity check") + strings.Count(out, " is empty."); n != indexes {
		t.Errorf("index sanity checks passed: %d of %d:\n%s", n, indexes, out)
	}
	for _, bad := range []string{"Mismatch", "mismatch", "corrupt", "Exception", "non-monotonic", "Non-monotonic"} {
		if strings.Contains(out+stderr, bad) {
			t.Errorf("kafka-dump-log reports %q:\n%s\n%s", bad, out, stderr)
		}
	}
	if n := strings.Count(out, "baseOffset: "); n == 0 {
		t.Errorf("kafka-dump-log decoded no batch:\n%s", out)
	}
}

// crashWriter is the producer side: values are "<key>:<seq>" with seq
// increasing across the whole test, so "a later value" is a larger seq.
type crashWriter struct {
	mu    sync.Mutex
	sent  int64            // seqs below this were handed to a client
	acked map[string]int64 // key -> largest acknowledged seq
}

// round produces until killAfter has passed, calls kill, and collects
// what was acknowledged; records not acknowledged may or may not persist.
func (w *crashWriter) round(t *testing.T, addr string, killAfter time.Duration, kill func()) {
	t.Helper()
	cl := testutil.Client(t, addr, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(crashTopic),
		kgo.MaxBufferedRecords(2000), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		for n := 0; n < crashPerRound && ctx.Err() == nil; n++ {
			w.mu.Lock()
			seq := w.sent
			w.sent++
			w.mu.Unlock()
			key := fmt.Sprintf("k%03d", seq%crashKeys)
			value := fmt.Sprintf("%s:%d:%s", key, seq, strings.Repeat("x", int(seq%50)))
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Key: []byte(key), Value: []byte(value)}, func(r *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					return
				}
				w.mu.Lock()
				w.acked[key] = max(w.acked[key], seq)
				w.mu.Unlock()
			})
		}
	}()
	timer := time.NewTimer(killAfter)
	select {
	case <-timer.C:
	case <-done:
		timer.Stop()
	}
	kill()
	cancel()
	<-done
	cl.Close() // fails what is still buffered
	wg.Wait()
}

// fill writes enough to every partition to roll its active segment.
func (w *crashWriter) fill(t *testing.T, addr string) {
	t.Helper()
	cl := testutil.Client(t, addr, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(crashTopic))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 * crashKeys {
		seq := w.sent
		w.sent++
		key := fmt.Sprintf("k%03d", seq%crashKeys)
		value := fmt.Sprintf("%s:%d:%s", key, seq, strings.Repeat("f", 100))
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(key), Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatalf("fill: %v", err)
		}
		w.acked[key] = max(w.acked[key], seq)
	}
}

type readBack struct {
	records map[int32][]*kgo.Record
}

// verify reads every partition from its start to its high watermark and
// checks offsets and each key's value against what was acknowledged.
func (w *crashWriter) verify(t *testing.T, addr string) readBack {
	t.Helper()
	adm := kadm.NewClient(testutil.Client(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, crashTopic)
	if err != nil || ends.Error() != nil {
		t.Fatalf("list end offsets: %v %v", err, ends.Error())
	}
	adm.Close()
	offsets := map[string]map[int32]kgo.Offset{crashTopic: {}}
	want := map[int32]int64{}
	for p := range int32(crashPartitions) {
		o, _ := ends.Lookup(crashTopic, p)
		want[p] = o.Offset
		offsets[crashTopic][p] = kgo.NewOffset().AtStart()
	}
	cl := testutil.Client(t, addr, kgo.ConsumePartitions(offsets))
	got := readBack{records: map[int32][]*kgo.Record{}}
	next := map[int32]int64{}
	latest := map[string]int64{}
	for !caughtUp(next, want) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read back: reached %v of end offsets %v", next, want)
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) {
				t.Fatalf("fetch partition %d: %v", fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < next[r.Partition] {
				t.Fatalf("partition %d: offset %d after %d", r.Partition, r.Offset, next[r.Partition]-1)
			}
			next[r.Partition] = r.Offset + 1
			got.records[r.Partition] = append(got.records[r.Partition], r)
			k, seqText, ok := strings.Cut(string(r.Value), ":")
			seqText, _, _ = strings.Cut(seqText, ":")
			seq, err := strconv.ParseInt(seqText, 10, 64)
			if !ok || err != nil || k != string(r.Key) || seq >= w.sent {
				t.Fatalf("partition %d offset %d: key %q value %q was never sent", r.Partition, r.Offset, r.Key, r.Value)
			}
			latest[k] = seq
		})
	}
	for key, seq := range w.acked {
		if latest[key] < seq {
			t.Errorf("key %s: read seq %d, but seq %d was acknowledged", key, latest[key], seq)
		}
	}
	return got
}

func caughtUp(next, want map[int32]int64) bool {
	for p, end := range want {
		if next[p] < end {
			return false
		}
	}
	return true
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
