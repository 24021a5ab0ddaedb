package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// finalizedTV answers whether tb's ApiVersions v3 finalizes
// transaction.version 2.
func finalizedTV(tb *testBroker) bool {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	for _, f := range tb.roundTrip(req).(*kmsg.ApiVersionsResponse).FinalizedFeatures {
		if f.Name == transactionVersionFeature && f.MaxVersionLevel >= 2 {
			return true
		}
	}
	return false
}

// TestTV2FinalizedOnlyWhenEveryBrokerServesIt: in a cluster with a broker
// that serves Produce only up to v11 (as a ZooKeeper-mode Kafka 3.9 broker
// of a mixed cluster does), no broker finalizes transaction.version 2.
// Before, every Brook broker did; franz-go then skipped AddPartitionsToTxn
// and the Kafka 3.9 leaders answered its transactional produces with
// TRANSACTION_ABORTABLE (tests/interop TestMixedMembership). Once that
// broker serves v12, the others finalize it, and stop when it serves v11
// again (rolled back).
func TestTV2FinalizedOnlyWhenEveryBrokerServesIt(t *testing.T) {
	var old atomic.Bool // broker 3 answers as an older broker
	old.Store(true)
	c := startReplClusterWith(t, func(b *Broker) {
		if b.cfg.BrokerID != 3 {
			return
		}
		av := b.handlers[18]
		b.handlers[18] = handler{av.min, av.max, func(ctx context.Context, r *request, kr kmsg.Request) (reply, error) {
			rep, err := av.fn(ctx, r, kr)
			if resp, ok := rep.resp.(*kmsg.ApiVersionsResponse); ok && old.Load() {
				for i := range resp.ApiKeys {
					if resp.ApiKeys[i].ApiKey == int16(kmsg.Produce) {
						resp.ApiKeys[i].MaxVersion = 11
					}
				}
			}
			return rep, err
		}}
	})
	tb := c.brokers[1]
	tb.createTopic("ready", 1, nil) // the metadata cache lists every broker
	testutil.Eventually(t, 30*time.Second, func() error {
		if len(tb.b.meta.liveBrokers(tb.b.cfg.InterBrokerListenerName)) != 3 {
			return fmt.Errorf("broker 1 does not know all three brokers yet")
		}
		return nil
	})
	notFinalized := func() error {
		if finalizedTV(tb) {
			return fmt.Errorf("broker 1 finalizes transaction.version 2 with broker 3 serving Produce v11")
		}
		return nil
	}
	testutil.Eventually(t, 30*time.Second, notFinalized)
	old.Store(false)
	testutil.Eventually(t, 30*time.Second, func() error {
		if !finalizedTV(tb) {
			return fmt.Errorf("broker 1 does not finalize transaction.version 2 with every broker serving it")
		}
		return nil
	})
	// Broker 3 restarted as an older broker (a rollback): not any more.
	old.Store(true)
	testutil.Eventually(t, 30*time.Second, notFinalized)
}
