package broker

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPeerRequestsNegotiateVersions: Brook sends another broker a request
// at the newest version both serve, learned from ApiVersions on each new
// connection, as Kafka's clients do. Before, it sent its own newest:
// WriteTxnMarkers v2 to a Kafka 3.9 leader, which serves 0-1 and closes
// the connection, so a Brook transaction coordinator could not complete
// transactions on partitions Kafka led. The peer here answers ApiVersions
// with WriteTxnMarkers up to v1 while serving v2.
func TestPeerRequestsNegotiateVersions(t *testing.T) {
	var got atomic.Int32
	got.Store(-1)
	tb := startBrokerWith(t, nil, func(b *Broker) {
		av := b.handlers[18]
		b.handlers[18] = handler{av.min, av.max, func(ctx context.Context, r *request, kr kmsg.Request) (reply, error) {
			rep, err := av.fn(ctx, r, kr)
			if resp, ok := rep.resp.(*kmsg.ApiVersionsResponse); ok {
				for i := range resp.ApiKeys {
					if resp.ApiKeys[i].ApiKey == 27 {
						resp.ApiKeys[i].MaxVersion = 1
					}
				}
			}
			return rep, err
		}}
		wtm := b.handlers[27]
		b.handlers[27] = handler{wtm.min, wtm.max, func(ctx context.Context, r *request, kr kmsg.Request) (reply, error) {
			got.Store(int32(kr.GetVersion()))
			return wtm.fn(ctx, r, kr)
		}}
	})
	tb.createTopic("ready", 1, nil) // the metadata cache knows broker 0's endpoint
	if _, err := tb.b.peers.Request(testContext(t), 0, "test", kmsg.NewPtrWriteTxnMarkersRequest()); err != nil {
		t.Fatal(err)
	}
	if v := got.Load(); v != 1 {
		t.Fatalf("WriteTxnMarkers sent at v%d to a broker serving 0-1, want v1", v)
	}
}
