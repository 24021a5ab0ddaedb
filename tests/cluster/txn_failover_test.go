package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestTransactionCoordinatorKill9: __transaction_state is replicated with
// transaction.state.log.replication.factor, and when the coordinator of an
// ongoing transaction is killed the new leader of its partition loads it
// and answers for it with the same producer id, epoch and partitions.
func TestTransactionCoordinatorKill9(t *testing.T) {
	c := startCluster(t, 3, map[string]string{
		"transaction.state.log.num.partitions": "1",
		"replica.lag.time.max.ms":              "120000",
	})
	const topic, txnID = "txn-failover", "txn-failover-id"
	c.createTopic(topic, 1, nil)
	c.converge(c.ids, healthy(topic, 1, c.ids))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cl := testutil.Client(t, c.bootstrap(), kgo.TransactionalID(txnID), kgo.TransactionTimeout(10*time.Minute))
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("transactional producer id: %v", err)
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.SetVersion(3)
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = txnID, pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = topic, []int32{0}
	add.Topics = append(add.Topics, at)
	resp, err := add.RequestWith(ctx, cl)
	if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("add partitions: %+v %v", resp, err)
	}

	adm := kadm.NewClient(testutil.Client(t, c.bootstrap()))
	described, err := adm.DescribeTransactions(ctx, txnID)
	if err != nil {
		t.Fatal(err)
	}
	before := described[txnID]
	if before.Err != nil || before.State != "Ongoing" {
		t.Fatalf("before failover: %+v", before)
	}
	c.kill9(before.Coordinator)
	live := c.others(before.Coordinator)
	c.converge(live, func(v clusterView) error {
		p, ok := v.Partitions[tp{"__transaction_state", 0}]
		if !ok {
			return fmt.Errorf("no __transaction_state-0 in metadata")
		}
		if p.Leader == before.Coordinator || p.Leader < 0 {
			return fmt.Errorf("__transaction_state-0 led by %d", p.Leader)
		}
		return nil
	})
	var after kadm.DescribedTransaction
	testutil.Eventually(t, convergeTimeout, func() error {
		dctx, dcancel := context.WithTimeout(ctx, requestTimeout)
		defer dcancel()
		// A fresh client each time: a client caches the coordinator it
		// found and keeps dialing the killed one.
		fresh, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.bootstrap(), ",")...))
		if err != nil {
			return err
		}
		defer fresh.Close()
		d, err := kadm.NewClient(fresh).DescribeTransactions(dctx, txnID)
		if err != nil {
			return err
		}
		after = d[txnID]
		if after.Err != nil {
			return after.Err
		}
		if after.Coordinator == before.Coordinator {
			return fmt.Errorf("still described by the killed broker %d", before.Coordinator)
		}
		return nil
	})
	if after.State != "Ongoing" || after.ProducerID != pid || after.ProducerEpoch != epoch || !after.Topics.Lookup(topic, 0) {
		t.Fatalf("after failover: %+v, want Ongoing for producer %d epoch %d on %s-0", after, pid, epoch, topic)
	}
}
