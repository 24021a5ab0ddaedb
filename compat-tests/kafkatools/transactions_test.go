package kafkatools

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/compat-tests/internal/harness"
	"github.com/brook-mq/brook/internal/testutil"
)

// TestTransactionsTool: Kafka's kafka-transactions lists and describes a
// transactional id Brook coordinates, and kafka-dump-log's transaction log
// decoder reads Brook's __transaction_state.
func TestTransactionsTool(t *testing.T) {
	harness.ForEachRelease(t, brookBin, map[string]string{"transaction.state.log.num.partitions": "1"}, transactionsToolScenario)
}

func transactionsToolScenario(t *testing.T, env *harness.Env) {
	const txnID = "compat-txn"
	cl := testutil.Client(t, env.Addr(), kgo.TransactionalID(txnID), kgo.TransactionTimeout(45*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pid, _, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("transactional producer id: %v", err)
	}
	pidText := strconv.FormatInt(pid, 10)

	out, errOut := env.Tool("kafka-transactions.sh", "--bootstrap-server", env.Addr(), "list")
	if !rowWith(out, txnID, pidText, "Empty") {
		env.Fatalf(out, errOut, "list: no row for %s with producer id %s in state Empty", txnID, pidText)
	}
	out, errOut = env.Tool("kafka-transactions.sh", "--bootstrap-server", env.Addr(), "describe", "--transactional-id", txnID)
	if !rowWith(out, "0", txnID, pidText, "0", "Empty", "45000") {
		env.Fatalf(out, errOut, "describe: no row for %s with producer id %s, Empty, timeout 45000", txnID, pidText)
	}

	// A transaction on one partition: Ongoing, with its partition.
	createTopic(env, "compat-txn-topic", 1)
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.SetVersion(3)
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = txnID, pid, 0
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "compat-txn-topic", []int32{0}
	add.Topics = append(add.Topics, at)
	resp, err := add.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("add partitions: %+v %v", resp, err)
	}
	out, errOut = env.Tool("kafka-transactions.sh", "--bootstrap-server", env.Addr(), "describe", "--transactional-id", txnID)
	if !rowWith(out, txnID, pidText, "Ongoing", "45000", "compat-txn-topic-0") {
		env.Fatalf(out, errOut, "describe: no Ongoing row for %s with partition compat-txn-topic-0", txnID)
	}

	cl.Close()
	if err := env.Brook.Stop(); err != nil {
		t.Fatalf("stop brook: %v", err)
	}
	seg := filepath.Join(env.Brook.DataDir(), "__transaction_state-0", "00000000000000000000.log")
	out, errOut = env.Tool("kafka-dump-log.sh", "--transaction-log-decoder", "--files", seg)
	if env.Release == harness.Kafka39 {
		// 3.9's decoder prints text, not JSON.
		if !lineWith(out, "transactionalId="+txnID+" ", "producerId:"+pidText+",", "state=Empty,", "txnTimeoutMs=45000") {
			env.Fatalf(out, errOut, "dump: no decoded record of %s with producer id %s in state Empty", txnID, pidText)
		}
		if !lineWith(out, "state=Ongoing,partitions=[compat-txn-topic-0]") {
			env.Fatalf(out, errOut, "dump: no decoded Ongoing record with partition compat-txn-topic-0")
		}
		return
	}
	if !lineWith(out, `"transactionalId":"`+txnID+`"`, `"producerId":`+pidText+`,`, `"transactionStatus":"Empty"`, `"transactionTimeoutMs":45000`) {
		env.Fatalf(out, errOut, "dump: no decoded record of %s with producer id %s in state Empty", txnID, pidText)
	}
	if !lineWith(out, `"transactionStatus":"Ongoing"`, `"transactionPartitions":[{"topic":"compat-txn-topic","partitionIds":[0]}]`) {
		env.Fatalf(out, errOut, "dump: no decoded Ongoing record with partition compat-txn-topic-0")
	}
}

// rowWith reports whether a line of a tool's table has every cell.
func rowWith(out string, cells ...string) bool {
	for _, line := range harness.Lines(out) {
		fields := strings.Fields(line)
		if !slices.ContainsFunc(cells, func(c string) bool { return !slices.Contains(fields, c) }) {
			return true
		}
	}
	return false
}

// lineWith reports whether one line of out holds every word.
func lineWith(out string, words ...string) bool {
	for _, line := range harness.Lines(out) {
		ok := true
		for _, w := range words {
			if !strings.Contains(line, w) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
