package kafkatools

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// TestTransactionalMessageCopier runs the copier of Kafka's transaction
// system tests: it consumes a partition and produces it to another topic
// in transactions that also commit the consumed offsets, aborting some at
// random and copying those records again. kafka-verifiable-consumer at
// read_committed then must read every input value exactly once.
func TestTransactionalMessageCopier(t *testing.T) {
	harness.ForEachRelease(t, brookBin, nil, copierScenario)
}

func copierScenario(t *testing.T, env *harness.Env) {
	const in, out, n = "compat-copier-in", "compat-copier-out", 600
	createTopic(env, in, 1)
	createTopic(env, out, 3)
	cl := testutil.Client(t, env.Addr(), kgo.DefaultProduceTopic(in))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want := map[string]bool{}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		v := "copied-" + strconv.Itoa(i)
		want[v] = true
		recs[i] = &kgo.Record{Partition: 0, Value: []byte(v)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce input: %v", err)
	}

	stdout, errOut := env.Tool("kafka-transactional-message-copier.sh", "--broker-list", env.Addr(),
		"--input-topic", in, "--input-partition", "0", "--output-topic", out,
		"--transactional-id", "compat-copier", "--consumer-group", "compat-copier-g",
		"--transaction-size", "50", "--max-messages", strconv.Itoa(n),
		"--enable-random-aborts", "--use-group-metadata")
	if !lineWith(stdout, `"remaining":0`) {
		env.Fatalf(stdout, errOut, "copier: no progress line with nothing remaining")
	}
	checkTransactionVersion(t, env, cl, "compat-copier", n/50)

	props := filepath.Join(t.TempDir(), "consumer.properties")
	if err := os.WriteFile(props, []byte("isolation.level=read_committed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, errOut = env.Tool("kafka-verifiable-consumer.sh", "--bootstrap-server", env.Addr(), "--topic", out,
		"--group-id", "compat-copier-check", "--max-messages", strconv.Itoa(n), "--reset-policy", "earliest",
		"--verbose", "--command-config", props)
	got := map[string]int{}
	for _, e := range parseEvents(env, stdout, errOut) {
		if e.Name == "record_data" {
			got[e.Value]++
		}
	}
	for v := range want {
		if got[v] != 1 {
			env.Fatalf(stdout, errOut, "value %s read %d times at read_committed, want once", v, got[v])
		}
	}
	if len(got) != len(want) {
		env.Fatalf(stdout, errOut, "read %d distinct values, want %d", len(got), len(want))
	}
}

// checkTransactionVersion proves which transaction version the release's
// producer used: Kafka 4.x's sees transaction.version 2 finalized in
// ApiVersions and bumps the epoch at every EndTxn (v5), so after txns
// transactions its epoch is at least txns; Kafka 3.9's speaks version 1
// and keeps the epoch InitProducerId gave it, 0.
func checkTransactionVersion(t *testing.T, env *harness.Env, cl *kgo.Client, txnID string, txns int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	described, err := kadm.NewClient(cl).DescribeTransactions(ctx, txnID)
	if err != nil {
		t.Fatalf("describe transaction %s: %v", txnID, err)
	}
	d, ok := described[txnID]
	if !ok || d.Err != nil {
		t.Fatalf("describe transaction %s: %+v", txnID, d)
	}
	t.Logf("%s: producer %d at epoch %d after %d transactions", txnID, d.ProducerID, d.ProducerEpoch, txns)
	if env.Release == harness.Kafka39 {
		if d.ProducerEpoch != 0 {
			t.Fatalf("Kafka 3.9 producer's epoch is %d after %d transactions, want 0 (transaction version 1)", d.ProducerEpoch, txns)
		}
		return
	}
	if int(d.ProducerEpoch) < txns {
		t.Fatalf("Kafka 4.x producer's epoch is %d after %d transactions: it did not use transaction version 2", d.ProducerEpoch, txns)
	}
}
