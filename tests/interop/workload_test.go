package interop

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The topics the workload writes, partition 0 of each.
const (
	topicCodecs  = "codecs"  // every codec, through franz-go's idempotent producer
	topicIdem    = "idem"    // a hand-driven idempotent producer (sequences checked exactly)
	topicTxn     = "txn"     // a transactional producer: commits and an abort
	topicCompact = "compact" // compact,delete: cleaned segments and deleted ones
)

var kafkaTopics = []string{topicCodecs, topicIdem, topicTxn, topicCompact}

// topicBrook is created by Brook (in ZooKeeper and its partition dir, with
// partition.metadata) in round 2, for Kafka to open in round 3.
const topicBrook = "brook-made"

// txnID is the transactional id every round uses, so that each broker's
// transaction coordinator continues the other's __transaction_state.
const txnID = "interop-txn"

func createTopics(t *testing.T, cl *kgo.Client, topics ...string) {
	t.Helper()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, topic := range topics {
		cfg := map[string]*string{}
		if topic == topicIdem {
			v := "1024"
			cfg["segment.bytes"] = &v
		}
		if topic == topicCompact {
			for k, v := range map[string]string{
				"cleanup.policy": "compact,delete", "segment.bytes": "2048",
				"min.cleanable.dirty.ratio": "0.01",
			} {
				cfg[k] = &v
			}
		}
		resp, err := adm.CreateTopic(ctx, 1, 1, cfg, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("create topic %s: %v", topic, err)
		}
	}
	for _, topic := range topics {
		testutil.Eventually(t, 30*time.Second, func() error {
			_, err := readView(cl, topic)
			return err
		})
	}
}

// idemProducer drives one idempotent producer id by hand, so that the test
// knows each batch's sequence and offset and can resend one.
type idemProducer struct {
	id       int64
	epoch    int16
	nextSeq  int32
	last     []byte // the last batch sent, for a duplicate
	lastBase int64  // its offset
}

func newIdemProducer(t *testing.T, cl *kgo.Client) *idemProducer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionTimeoutMillis = 60000
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("InitProducerID: %v", err)
	}
	return &idemProducer{id: resp.ProducerID, epoch: resp.ProducerEpoch}
}

// batchAt builds a batch of n records at sequence seq.
func (p *idemProducer) batchAt(t *testing.T, seq int32, n int) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Key: fmt.Appendf(nil, "idem-%d", int(seq)+i), Value: fmt.Appendf(nil, "v%d", int(seq)+i)}
	}
	b, err := batch.Build(batch.BuildOptions{
		PartitionLeaderEpoch: -1, BaseTimestamp: time.Now().UnixMilli(),
		Producer: &batch.Producer{ID: p.id, Epoch: p.epoch, BaseSequence: seq},
	}, recs, batch.MustCodecs())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// send produces b and returns the partition's error code and base offset.
func (p *idemProducer) send(t *testing.T, cl *kgo.Client, b []byte) (int16, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topicIdem
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("produce to %s: %v", topicIdem, err)
	}
	pr := resp.Topics[0].Partitions[0]
	return pr.ErrorCode, pr.BaseOffset
}

// produce sends batches of 3 records in sequence, each acknowledged.
func (p *idemProducer) produce(t *testing.T, cl *kgo.Client, batches int) {
	t.Helper()
	for range batches {
		b := p.batchAt(t, p.nextSeq, 3)
		code, base := p.send(t, cl, b)
		if code != 0 {
			t.Fatalf("idempotent produce at sequence %d: %v", p.nextSeq, kerr.ErrorForCode(code))
		}
		p.nextSeq += 3
		p.last, p.lastBase = b, base
	}
}

// checkContinues checks, on the broker cl talks to, that a resent last
// batch is answered as a duplicate with its original offset and not
// appended, that a gap is refused, and that the next sequence is accepted
// at the log end.
func (p *idemProducer) checkContinues(t *testing.T, cl *kgo.Client, who string) {
	t.Helper()
	before := serve(t, cl, topicIdem)
	code, base := p.send(t, cl, p.last)
	if code != 0 || base != p.lastBase {
		t.Errorf("%s: resent last batch of producer %d: error %v, offset %d; want a duplicate at %d", who, p.id, kerr.ErrorForCode(code), base, p.lastBase)
	}
	if code, _ := p.send(t, cl, p.batchAt(t, p.nextSeq+10, 1)); code != kerr.OutOfOrderSequenceNumber.Code {
		t.Errorf("%s: sequence gap for producer %d: error %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", who, p.id, kerr.ErrorForCode(code))
	}
	after := serve(t, cl, topicIdem)
	if after.HighWatermark != before.HighWatermark {
		t.Errorf("%s: the duplicate or the gap was appended: high watermark %d, was %d", who, after.HighWatermark, before.HighWatermark)
	}
	b := p.batchAt(t, p.nextSeq, 3)
	code, base = p.send(t, cl, b)
	if code != 0 || base != before.HighWatermark {
		t.Fatalf("%s: next sequence %d of producer %d: error %v at offset %d, want it appended at %d", who, p.nextSeq, p.id, kerr.ErrorForCode(code), base, before.HighWatermark)
	}
	p.nextSeq += 3
	p.last, p.lastBase = b, base
	ps := serve(t, cl, topicIdem).Producers
	i := slices.IndexFunc(ps, func(v producerView) bool { return v.ID == p.id })
	if i < 0 || ps[i].LastSequence != p.nextSeq-1 || ps[i].Epoch != int32(p.epoch) || ps[i].CurrentTxnStartOffset != -1 {
		t.Errorf("%s: DescribeProducers %+v, want producer %d epoch %d last sequence %d", who, ps, p.id, p.epoch, p.nextSeq-1)
	}
}

// writeRound writes one round of every kind of data through the broker
// at addr; round names the records. It returns the keys a read_committed
// consumer of topicTxn must see from this round.
//
// kafkaRecovers says that Kafka will open the dir after a kill -9: then
// the idempotent producer's batches of the round stay above the log
// start. Kafka's recovery of the segment holding the log start deletes
// every producer snapshot at or below the log start and above the
// segment's base (ProducerStateManager.truncateAndReload), and replays
// only the log: a producer whose batches all lie below the log start is
// forgotten, in Kafka's own dirs as in Brook's (docs/migration.md,
// Limits). Brook keeps it.
func writeRound(t *testing.T, addr string, cl *kgo.Client, idem *idemProducer, round int, kafkaRecovers bool) (committed []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		pc := testutil.Client(t, addr, kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic(topicCodecs))
		var recs []*kgo.Record
		for i := range 20 {
			recs = append(recs, &kgo.Record{
				Key: fmt.Appendf(nil, "r%d-%d", round, i), Value: []byte(strings.Repeat("value ", 20)),
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(strconv.Itoa(i))}},
			})
		}
		if err := pc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %s round %d: %v", topicCodecs, round, err)
		}
		pc.Close()
	}
	if round == 2 {
		createTopics(t, cl, topicBrook)
		bc := testutil.Client(t, addr, kgo.DefaultProduceTopic(topicBrook), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
		for i := range 3 {
			var recs []*kgo.Record
			for j := range 10 {
				recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "b%d-%d", i, j), Value: []byte(strings.Repeat("brook ", 10))})
			}
			if err := bc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", topicBrook, err)
			}
		}
		bc.Close()
	}
	idemStart := serve(t, cl, topicIdem).HighWatermark
	idem.produce(t, cl, 4)
	// Other records follow, and the records up to 10 past the producer's
	// go with their segments: its state is then only in the producer
	// snapshots, which the next broker must read.
	idemEnd := serve(t, cl, topicIdem).HighWatermark
	if kafkaRecovers {
		idemEnd = idemStart - 10
	}
	fc := testutil.Client(t, addr, kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic(topicIdem))
	for i := range 20 {
		if err := fc.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "filler %d %s", i, strings.Repeat("f", 40))}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", topicIdem, err)
		}
	}
	fc.Close()
	deleteRecords(t, cl, topicIdem, idemEnd+10)

	tc := testutil.Client(t, addr, kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topicTxn))
	for i, commit := range []bool{true, false, true} {
		if err := tc.BeginTransaction(); err != nil {
			t.Fatalf("begin transaction: %v", err)
		}
		var keys []string
		for j := range 5 {
			k := fmt.Sprintf("r%d-t%d-%d", round, i, j)
			keys = append(keys, k)
			if err := tc.ProduceSync(ctx, &kgo.Record{Key: []byte(k), Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatalf("transactional produce: %v", err)
			}
		}
		if err := tc.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %v): %v", commit, err)
		}
		if commit {
			committed = append(committed, keys...)
		}
	}
	tc.Close()

	start := serve(t, cl, topicCompact).HighWatermark
	cc := testutil.Client(t, addr, kgo.DefaultProduceTopic(topicCompact))
	for i := range 150 {
		r := &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%15), Value: fmt.Appendf(nil, "r%d-%d %s", round, i, strings.Repeat("z", 40))}
		if i >= 140 && i%5 == 0 {
			r.Value = nil // tombstones
		}
		if err := cc.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", topicCompact, err)
		}
	}
	cc.Close()
	// Deleting records below the round's 40th deletes the segments wholly
	// below it, as retention would, but at an offset the test knows.
	deleteRecords(t, cl, topicCompact, start+40)
	return committed
}

// deleteRecords moves the log start of partition 0 of topic to offset.
func deleteRecords(t *testing.T, cl *kgo.Client, topic string, offset int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).DeleteRecords(ctx, kadm.Offsets{topic: {0: {At: offset}}})
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete records of %s below %d: %v", topic, offset, err)
	}
}

// waitSettled waits until the broker whose log dir is dir has deleted the
// segments wholly below the log start of topicIdem and topicCompact and
// checkpointed that log start (the log start after a crash is the
// checkpointed one, in Kafka as in Brook), and cleaned topicCompact up to
// its active segment, so that neither the cleaner nor retention change
// anything any more.
func waitSettled(t *testing.T, cl *kgo.Client, dir string) {
	t.Helper()
	testutil.Eventually(t, 90*time.Second, func() error {
		for _, topic := range []string{topicIdem, topicCompact} {
			v, err := readView(cl, topic)
			if err != nil {
				return err
			}
			bases, err := segmentBases(filepath.Join(dir, topic+"-0"))
			if err != nil {
				return err
			}
			if len(bases) > 1 && bases[1] <= v.LogStart {
				return fmt.Errorf("%s: segment %d lies below the log start %d, not deleted yet", topic, bases[0], v.LogStart)
			}
			// Kafka checkpoints only log starts above the first segment's base.
			if ls, err := checkpointOffset(filepath.Join(dir, "log-start-offset-checkpoint"), topic); ls != v.LogStart && (err == nil || bases[0] != v.LogStart) {
				return fmt.Errorf("%s: log start %d, checkpointed %d (%v)", topic, v.LogStart, ls, err)
			}
		}
		return nil
	})
	waitCompacted(t, cl, dir)
}

// waitCompacted waits until the broker whose log dir is dir has deleted
// the segments of topicCompact wholly below its log start and cleaned it
// up to its active segment, so that neither the cleaner nor retention
// change it any more.
func waitCompacted(t *testing.T, cl *kgo.Client, dir string) {
	t.Helper()
	testutil.Eventually(t, 90*time.Second, func() error {
		v, err := readView(cl, topicCompact)
		if err != nil {
			return err
		}
		bases, err := segmentBases(filepath.Join(dir, topicCompact+"-0"))
		if err != nil {
			return err
		}
		if len(bases) > 1 && bases[1] <= v.LogStart {
			return fmt.Errorf("segment %d lies below the log start %d, not deleted yet", bases[0], v.LogStart)
		}
		cleaned, err := checkpointOffset(filepath.Join(dir, "cleaner-offset-checkpoint"), topicCompact)
		if err != nil {
			return err
		}
		if active := bases[len(bases)-1]; cleaned != active {
			return fmt.Errorf("cleaned up to %d, active segment at %d", cleaned, active)
		}
		return nil
	})
}

func checkpointOffset(path, topic string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 3 && fs[0] == topic && fs[1] == "0" {
			return strconv.ParseInt(fs[2], 10, 64)
		}
	}
	return -1, fmt.Errorf("%s: no entry for %s-0", path, topic)
}

// segmentBases lists the base offsets of the segments in a partition dir,
// ascending.
func segmentBases(dir string) ([]int64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var bases []int64
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			if o, err := strconv.ParseInt(n, 10, 64); err == nil {
				bases = append(bases, o)
			}
		}
	}
	if len(bases) == 0 {
		return nil, fmt.Errorf("%s: no segment", dir)
	}
	slices.Sort(bases)
	return bases, nil
}

// committedKeys reads topicTxn read_committed from the start to the last
// stable offset with a franz-go consumer and returns the keys it gets.
func committedKeys(t *testing.T, cl *kgo.Client, addr string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lso := serve(t, cl, topicTxn).LastStable
	c := testutil.Client(t, addr, kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topicTxn: {0: kgo.NewOffset().AtStart()}}))
	defer c.Close()
	var keys []string
	for {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read_committed consume of %s: %v after %d keys", topicTxn, err, len(keys))
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) { keys = append(keys, string(r.Key)) })
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if len(p.Records) > 0 && p.Records[len(p.Records)-1].Offset >= lso-2 {
				done = true // the last record before the commit marker
			}
		})
		if done {
			return keys
		}
	}
}
