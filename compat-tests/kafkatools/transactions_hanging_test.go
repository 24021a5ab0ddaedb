package kafkatools

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/protocol/batch"
)

// hangingPID is the producer id of the hanging transaction: no
// coordinator allocated it, so none will ever end its transaction.
const hangingPID = 777001

// TestTransactionsToolHanging: kafka-transactions describe-producers shows
// a transaction no coordinator knows (a transactional batch produced
// without AddPartitionsToTxn, which Brook, like Kafka without KIP-890
// verification, accepts), find-hanging reports it, and abort ends it with
// the epochs DescribeProducers gave, after which the last stable offset
// passes it.
func TestTransactionsToolHanging(t *testing.T) {
	harness.ForEachRelease(t, brookBin, nil, hangingScenario)
}

func hangingScenario(t *testing.T, env *harness.Env) {
	const topic = "compat-hanging"
	createTopic(env, topic, 1)
	// Produce v13 names topics by id: stay at 3.9's versions to name them.
	cl := testutil.Client(t, env.Addr(), kgo.MaxVersions(kversion.V3_9_0()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("plain")}).FirstErr(); err != nil {
		t.Fatalf("plain produce: %v", err)
	}
	produceHanging(ctx, t, cl, topic)
	// The batch is at offsets 1-3; read_committed stops at its start.
	if lso := readCommittedEnd(ctx, t, cl, topic); lso != 1 {
		t.Fatalf("last stable offset %d with the transaction open, want 1", lso)
	}
	pid := strconv.Itoa(hangingPID)

	out, errOut := env.Tool("kafka-transactions.sh", "--bootstrap-server", env.Addr(), "describe-producers", "--topic", topic, "--partition", "0")
	// ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp CurrentTransactionStartOffset
	if !rowWith(out, pid, "3", "-1", "2", "1") {
		env.Fatalf(out, errOut, "describe-producers: no row for producer %s epoch 3 last sequence 2 open at offset 1", pid)
	}
	out, errOut = env.Tool("kafka-transactions.sh", "--bootstrap-server", env.Addr(), "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0")
	if !rowWith(out, topic, "0", pid, "3", "-1", "1") {
		env.Fatalf(out, errOut, "find-hanging: no row for %s-0 producer %s epoch 3 at offset 1", topic, pid)
	}
	out, errOut = env.Tool("kafka-transactions.sh", "--bootstrap-server", env.Addr(), "abort", "--topic", topic, "--partition", "0", "--start-offset", "1")
	// The marker goes at offset 4: the last stable offset is past it.
	testutil.Eventually(t, 30*time.Second, func() error {
		if lso := readCommittedEnd(ctx, t, cl, topic); lso != 5 {
			return errorf("last stable offset %d after the abort, want 5 (abort output %q, stderr %q)", lso, out, errOut)
		}
		return nil
	})
	out, errOut = env.Tool("kafka-transactions.sh", "--bootstrap-server", env.Addr(), "find-hanging", "--broker-id", "0", "--max-transaction-timeout", "0")
	if rowWith(out, topic, "0", pid) {
		env.Fatalf(out, errOut, "find-hanging: producer %s still hanging after the abort", pid)
	}
}

// produceHanging writes one transactional batch of three records for
// hangingPID (epoch 3) to partition 0 of topic, a minute old so that
// find-hanging counts it past any timeout.
func produceHanging(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	recs := make([]batch.Record, 3)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Value: []byte("hanging-" + itoa(i))}
	}
	b, err := batch.Build(batch.BuildOptions{
		BaseTimestamp: time.Now().Add(-time.Minute).UnixMilli(), Transactional: true, PartitionLeaderEpoch: -1,
		Producer: &batch.Producer{ID: hangingPID, Epoch: 3, BaseSequence: 0},
	}, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	txnID := "compat-hanging-producer"
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = -1, 30000, &txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = b
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("transactional produce: error code %d", code)
	}
}

// readCommittedEnd is partition 0's latest offset at read_committed: its
// last stable offset.
func readCommittedEnd(ctx context.Context, t *testing.T, cl *kgo.Client, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, 1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("list offsets: error code %d", p.ErrorCode)
	}
	return p.Offset
}
