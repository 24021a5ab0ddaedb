package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/auth"
)

// TestTV2ProduceDeniedTopicNotAdded: a transactional Produce v12 to a
// topic the principal may not write is refused, and its partition does
// not join the transaction (the implicit add comes after the check).
func TestTV2ProduceDeniedTopicNotAdded(t *testing.T) {
	ab := startACLBroker(t, map[string]string{"transaction.state.log.num.partitions": "3"})
	ab.createTopic("tv2", 2, nil)
	ab.allow(auth.ResourceTransactionalID, "tx", "alice", auth.OpWrite)
	ab.asUser("alice")
	init := initTxn(t, ab.testBroker, 5, "tx")
	code := produceTxnRaw(t, ab.testBroker, 12, "tx", "tv2", 0, txnBatch(t, init.ProducerID, init.ProducerEpoch, 0))
	wantCode(t, "produce to a denied topic", code, kerr.TopicAuthorizationFailed)
	if d := describeTxn(ab.testBroker, "tx"); len(d.Topics) != 0 {
		t.Fatalf("a denied topic joined the transaction: %s %+v", d.State, d.Topics)
	}
}
