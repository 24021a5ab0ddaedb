package broker

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
	"github.com/brook-mq/brook/replica"
)

// txnBroker starts a broker with the __consumer_offsets marker hook
// recorded in hook.
func txnBroker(t *testing.T, hook txnOffsetsCompleter) *testBroker {
	return startBrokerWith(t, nil, func(b *Broker) { b.txnOffsets = hook })
}

// leaderOf waits until this broker leads topic's partition.
func (tb *testBroker) leaderOf(topic string, partition int32) *replica.Partition {
	tb.t.Helper()
	var p *replica.Partition
	testutil.Eventually(tb.t, 30*time.Second, func() error {
		p = tb.b.replicas.Get(topic, partition)
		if p == nil || !p.IsLeader() {
			return fmt.Errorf("%s-%d not led yet", topic, partition)
		}
		return nil
	})
	return p
}

// produceRaw sends one batch in a Produce v9 acks=all request and returns
// the partition's error code and base offset.
func (tb *testBroker) produceRaw(topic string, txnID *string, b []byte) (int16, int64) {
	tb.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 30000, txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	sp := tb.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	return sp.ErrorCode, sp.BaseOffset
}

// writeMarker sends WriteTxnMarkers v1 for one marker on the given
// partitions and returns their error codes.
func (tb *testBroker) writeMarker(pid int64, epoch int16, coordEpoch int32, commit bool, topic string, partitions ...int32) []int16 {
	tb.t.Helper()
	resp := tb.roundTrip(markerRequest(pid, epoch, coordEpoch, commit, topic, partitions...)).(*kmsg.WriteTxnMarkersResponse)
	var codes []int16
	for _, p := range resp.Markers[0].Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	return codes
}

// markerRequest is a WriteTxnMarkers v1 request for one marker.
func markerRequest(pid int64, epoch int16, coordEpoch int32, commit bool, topic string, partitions ...int32) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed = pid, epoch, coordEpoch, commit
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, partitions
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	return req
}

func txnRecords(t *testing.T, pid int64, seq int32, transactional bool, values ...string) []byte {
	t.Helper()
	recs := make([]batch.Record, len(values))
	for i, v := range values {
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: []byte(v)}
	}
	opts := batch.BuildOptions{BaseTimestamp: time.Now().UnixMilli(), Transactional: transactional, PartitionLeaderEpoch: -1}
	if pid >= 0 {
		opts.Producer = &batch.Producer{ID: pid, Epoch: 0, BaseSequence: seq}
	}
	b, err := batch.Build(opts, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// produceTxnScenario writes random interleavings of transactions from
// three producers (transactional Produce requests) and plain records to
// topic-0, ending each transaction with a WriteTxnMarkers commit or abort.
// It returns every value in offset order and the committed ones.
func produceTxnScenario(t *testing.T, tb *testBroker, topic string, seed uint64) (all, committed []string) {
	t.Helper()
	txnID := "tx"
	r := rand.New(rand.NewPCG(seed, 2))
	open := map[int64][]string{} // producer -> values of its open transaction
	seq := map[int64]int32{}
	aborted := map[string]bool{}
	end := func(pid int64, commit bool) {
		if codes := tb.writeMarker(pid, 0, 0, commit, topic, 0); codes[0] != 0 {
			t.Fatalf("marker for %d: %v", pid, kerr.ErrorForCode(codes[0]))
		}
		for _, v := range open[pid] {
			aborted[v] = !commit
		}
		delete(open, pid)
	}
	for i := 0; i < 120; i++ {
		pid := int64(1000 + r.IntN(4))
		if pid == 1003 {
			v := fmt.Sprintf("plain-%d", i)
			if code, _ := tb.produceRaw(topic, nil, txnRecords(t, -1, -1, false, v)); code != 0 {
				t.Fatalf("plain produce: %v", kerr.ErrorForCode(code))
			}
			all = append(all, v)
			continue
		}
		if _, ok := open[pid]; ok && r.IntN(3) == 0 {
			end(pid, r.IntN(2) == 0)
			continue
		}
		var values []string
		for j := range 1 + r.IntN(3) {
			values = append(values, fmt.Sprintf("p%d-%d-%d", pid, i, j))
		}
		if code, _ := tb.produceRaw(topic, &txnID, txnRecords(t, pid, seq[pid], true, values...)); code != 0 {
			t.Fatalf("transactional produce: %v", kerr.ErrorForCode(code))
		}
		seq[pid] += int32(len(values))
		open[pid] = append(open[pid], values...)
		all = append(all, values...)
	}
	pids := slices.Collect(maps.Keys(open))
	slices.Sort(pids)
	for _, pid := range pids {
		end(pid, pid%2 == 0)
	}
	committed = slices.DeleteFunc(slices.Clone(all), func(v string) bool { return aborted[v] })
	if len(committed) == len(all) {
		t.Fatal("no transaction was aborted")
	}
	return all, committed
}

// TestReadCommittedSkipsAbortedTransactions consumes a random transaction
// scenario with franz-go at read_committed, in small fetches: it gets
// exactly the plain and committed records in offset order, never an
// aborted one (franz-go drops records by the fetch response's aborted
// transactions). At read_uncommitted the aborted records are there.
func TestReadCommittedSkipsAbortedTransactions(t *testing.T) {
	tb := txnBroker(t, nil)
	tb.createTopic("txn", 1, nil)
	tb.leaderOf("txn", 0)
	all, committed := produceTxnScenario(t, tb, "txn", 1)
	if got := consumeValues(t, tb, kgo.ReadCommitted(), len(committed)); !slices.Equal(got, committed) {
		t.Fatalf("read_committed got %d records %v\nwant %d %v", len(got), got, len(committed), committed)
	}
	if got := consumeValues(t, tb, kgo.ReadUncommitted(), len(all)); !slices.Equal(got, all) {
		t.Fatalf("read_uncommitted got %d records, want %d", len(got), len(all))
	}
}

// TestReadCommittedOtherClients: librdkafka (kcat) and Kafka's Java
// consumer at read_committed also get exactly the committed records of a
// random transaction scenario, each filtering by the aborted transactions
// in its own way.
func TestReadCommittedOtherClients(t *testing.T) {
	tb := txnBroker(t, nil)
	tb.createTopic("txn", 1, nil)
	tb.leaderOf("txn", 0)
	_, committed := produceTxnScenario(t, tb, "txn", 7)
	want := strings.Join(committed, "\n") + "\n"
	out, stderr, err := testutil.Kcat(t, nil, "-b", tb.addr, "-C", "-t", "txn", "-o", "beginning", "-e", "-q",
		"-X", "isolation.level=read_committed", "-X", "max.partition.fetch.bytes=1024", "-f", "%s\n")
	if err != nil || out != want {
		t.Fatalf("kcat read_committed: %v\n%s\ngot:\n%s\nwant:\n%s", err, stderr, out, want)
	}
	out, stderr, err = testutil.KafkaTool(t, "kafka-console-consumer.sh", "--bootstrap-server", tb.addr, "--topic", "txn",
		"--from-beginning", "--isolation-level", "read_committed", "--max-messages", fmt.Sprint(len(committed)),
		"--timeout-ms", "30000")
	if err != nil || out != want {
		t.Fatalf("kafka-console-consumer read_committed: %v\n%s\ngot:\n%s\nwant:\n%s", err, stderr, out, want)
	}
}

// consumeValues reads topic txn from the start at the isolation level
// until n records arrived, in fetches of at most 1 KiB per partition so
// that the aborted transactions are asked for many ranges.
func consumeValues(t *testing.T, tb *testBroker, level kgo.IsolationLevel, n int) []string {
	t.Helper()
	cl := tb.client(kgo.ConsumeTopics("txn"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(level), kgo.FetchMaxPartitionBytes(1024), kgo.FetchMaxBytes(1024))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// TestLastStableOffsetInFetchAndListOffsets: an open transaction holds the
// last stable offset at its first offset; read_committed Fetch returns
// only records below it and says so in last_stable_offset, ListOffsets
// latest at isolation 1 returns it; read_uncommitted sees the HW. The
// commit marker releases it.
func TestLastStableOffsetInFetchAndListOffsets(t *testing.T) {
	tb := txnBroker(t, nil)
	tb.createTopic("lso", 1, nil)
	tb.leaderOf("lso", 0)
	txnID := "tx"
	tb.produceRaw("lso", nil, txnRecords(t, -1, -1, false, "a", "b"))
	if code, base := tb.produceRaw("lso", &txnID, txnRecords(t, 7, 0, true, "t1", "t2")); code != 0 || base != 2 {
		t.Fatalf("transactional produce: %v at %d", kerr.ErrorForCode(code), base)
	}
	tb.produceRaw("lso", nil, txnRecords(t, -1, -1, false, "c"))
	check := func(isolation int8, wantLSO, wantBound int64) {
		t.Helper()
		fetch := kmsg.NewPtrFetchRequest()
		fetch.SetVersion(12)
		fetch.ReplicaID, fetch.MaxBytes, fetch.IsolationLevel, fetch.SessionEpoch = -1, 1<<20, isolation, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "lso"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
		fetch.Topics = append(fetch.Topics, ft)
		sp := tb.roundTrip(fetch).(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if sp.ErrorCode != 0 || sp.HighWatermark != 5 || sp.LastStableOffset != wantLSO {
			t.Fatalf("isolation %d: fetch error %d, HW %d, LSO %d, want HW 5, LSO %d", isolation, sp.ErrorCode, sp.HighWatermark, sp.LastStableOffset, wantLSO)
		}
		last := int64(-1)
		for b := sp.RecordBatches; len(b) > 0; {
			h, err := batch.ParseHeader(b)
			if err != nil {
				t.Fatal(err)
			}
			last, b = h.LastOffset(), b[h.Size():]
		}
		if last+1 != wantBound {
			t.Fatalf("isolation %d: fetched up to %d, want below %d", isolation, last, wantBound)
		}
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.SetVersion(5)
		lo.ReplicaID, lo.IsolationLevel = -1, isolation
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "lso"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp, lp.CurrentLeaderEpoch = -1, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		op := tb.roundTrip(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if op.ErrorCode != 0 || op.Offset != wantBound {
			t.Fatalf("isolation %d: ListOffsets latest %d (error %d), want %d", isolation, op.Offset, op.ErrorCode, wantBound)
		}
	}
	check(1, 2, 2)
	check(0, 2, 5)
	if codes := tb.writeMarker(7, 0, 0, true, "lso", 0); codes[0] != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(codes[0]))
	}
	tb.produceRaw("lso", nil, txnRecords(t, -1, -1, false, "d"))
	// Marker at 5, "d" at 6: nothing is unstable any more.
	checkAfter := func(isolation int8) {
		t.Helper()
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.SetVersion(5)
		lo.ReplicaID, lo.IsolationLevel = -1, isolation
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "lso"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp, lp.CurrentLeaderEpoch = -1, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		if op := tb.roundTrip(lo).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]; op.Offset != 7 {
			t.Fatalf("isolation %d after commit: latest %d, want 7", isolation, op.Offset)
		}
	}
	checkAfter(1)
	checkAfter(0)
}

// offsetsHook records the markers the group side is told of.
type offsetsHook struct {
	mu    sync.Mutex
	calls []string
}

func (h *offsetsHook) OnTxnMarker(partition int32, producerID int64, commit bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, fmt.Sprintf("%d/%d/%v", partition, producerID, commit))
}

// TestWriteTxnMarkersErrors covers the per-partition answers: unknown
// partitions, a fenced coordinator epoch, an older producer epoch, and a
// marker on __consumer_offsets, which reaches the group side's hook once
// committed; failed ones do not.
func TestWriteTxnMarkersErrors(t *testing.T) {
	hook := &offsetsHook{}
	tb := txnBroker(t, hook)
	tb.createTopic("m", 2, nil)
	tb.leaderOf("m", 0)
	tb.leaderOf("m", 1)
	txnID := "tx"
	if code, _ := tb.produceRaw("m", &txnID, txnRecords(t, 5, 0, true, "x")); code != 0 {
		t.Fatalf("produce: %v", kerr.ErrorForCode(code))
	}
	codes := tb.writeMarker(5, 2, 3, false, "m", 0, 1, 9)
	wantCode(t, "partition 0", codes[0], &kerr.Error{Code: 0})
	wantCode(t, "partition 1 (no transaction)", codes[1], &kerr.Error{Code: 0})
	wantCode(t, "partition 9", codes[2], kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown topic", tb.writeMarker(5, 2, 3, true, "nope", 0)[0], kerr.UnknownTopicOrPartition)
	wantCode(t, "older coordinator", tb.writeMarker(5, 2, 2, true, "m", 0)[0], kerr.TransactionCoordinatorFenced)
	wantCode(t, "older producer epoch", tb.writeMarker(5, 1, 3, true, "m", 0)[0], kerr.InvalidProducerEpoch)
	if p := tb.leaderOf("m", 0); p.Log().AbortedTransactions(0, p.Log().LogEndOffset())[0].FirstOffset != 0 {
		t.Fatalf("abort not indexed: %+v", p.Log().AbortedTransactions(0, 100))
	}

	tb.b.ensureOffsetsTopic(testContext(t))
	tb.leaderOf(consumerOffsetsTopic, 2)
	wantCode(t, "offsets partition", tb.writeMarker(6, 0, 0, true, consumerOffsetsTopic, 2)[0], &kerr.Error{Code: 0})
	wantCode(t, "fenced offsets partition", tb.writeMarker(6, 0, -5, false, consumerOffsetsTopic, 2)[0], kerr.TransactionCoordinatorFenced)
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if want := []string{"2/6/true"}; !slices.Equal(hook.calls, want) {
		t.Fatalf("hook calls %v, want %v", hook.calls, want)
	}
}

// TestProduceTransactionalRules: transactional records need a
// transactional id; a producer with an open transaction cannot write
// outside it (INVALID_TXN_STATE); and the broker-level refusal holds while
// the coordinator is missing.
func TestProduceTransactionalRules(t *testing.T) {
	tb := txnBroker(t, nil)
	tb.createTopic("r", 2, nil)
	tb.leaderOf("r", 0)
	tb.leaderOf("r", 1)
	txnID := "tx"
	// Kafka fails the whole request, the plain partition too.
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "r"
	for i, b := range [][]byte{txnRecords(t, -1, -1, false, "plain"), txnRecords(t, 5, 0, true, "x")} {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(1-i), b
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	for i, sp := range tb.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions {
		wantCode(t, fmt.Sprintf("transactional records without id, batch %d", i), sp.ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	}
	if leo := tb.leaderOf("r", 1).Log().LogEndOffset(); leo != 0 {
		t.Fatalf("refused request appended: LEO %d", leo)
	}
	code, _ := tb.produceRaw("r", &txnID, txnRecords(t, 5, 0, true, "x"))
	wantCode(t, "transactional", code, &kerr.Error{Code: 0})
	code, _ = tb.produceRaw("r", nil, txnRecords(t, 5, 1, false, "y"))
	wantCode(t, "idempotent inside a transaction", code, kerr.InvalidTxnState)

}
