package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestAllocateProducerIDs: a Kafka 3.9 broker in ZooKeeper mode (IBP 3.0+)
// asks the active controller for blocks of 1000 producer ids with
// AllocateProducerIds v0 instead of writing /latest_producer_id_block
// itself; with Brook as controller its idempotent producers failed
// ("Unable to allocate producer id because of a version mismatch") until
// Brook served key 67. Blocks are disjoint from each other and from the
// ids Brook's own brokers take; a wrong or unknown broker epoch is
// STALE_BROKER_EPOCH as in Kafka's controller.
func TestAllocateProducerIDs(t *testing.T) {
	tb := startBroker(t, nil)
	allocate := func(id int32, epoch int64) *kmsg.AllocateProducerIDsResponse {
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.SetVersion(0)
		req.BrokerID, req.BrokerEpoch = id, epoch
		return tb.roundTrip(req).(*kmsg.AllocateProducerIDsResponse)
	}
	// The broker registers (and learns its epoch) after startBroker returns.
	testutil.Eventually(t, 30*time.Second, func() error {
		if tb.b.brokerEpoch.Load() <= 0 {
			return errors.New("broker not registered yet")
		}
		return nil
	})
	epoch := tb.b.brokerEpoch.Load()
	first := allocate(0, epoch)
	own, err := tb.b.producerIDs.next(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	second := allocate(0, epoch)
	for _, r := range []*kmsg.AllocateProducerIDsResponse{first, second} {
		if r.ErrorCode != 0 || r.ProducerIDLen != 1000 || r.ProducerIDStart < 0 {
			t.Fatalf("AllocateProducerIds = error %d, start %d, len %d; want a block of 1000", r.ErrorCode, r.ProducerIDStart, r.ProducerIDLen)
		}
	}
	if in := func(id int64, r *kmsg.AllocateProducerIDsResponse) bool {
		return id >= r.ProducerIDStart && id < r.ProducerIDStart+int64(r.ProducerIDLen)
	}; second.ProducerIDStart < first.ProducerIDStart+1000 || in(own, first) || in(own, second) {
		t.Fatalf("blocks [%d,+1000) and [%d,+1000) overlap each other or Brook's own id %d", first.ProducerIDStart, second.ProducerIDStart, own)
	}
	if r := allocate(0, epoch-1); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Errorf("stale epoch: error %d, want STALE_BROKER_EPOCH", r.ErrorCode)
	}
	if r := allocate(7, epoch); r.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Errorf("unknown broker: error %d, want STALE_BROKER_EPOCH", r.ErrorCode)
	}
}
