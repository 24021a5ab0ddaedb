package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestPeerConnectionSurvivesIdleClose checks that the inter-broker client
// does not fail a request on a kept connection that the other broker has
// closed under connections.max.idle.ms: controller requests can be minutes
// apart in a quiet cluster.
func TestPeerConnectionSurvivesIdleClose(t *testing.T) {
	tb := startBroker(t, map[string]string{"connections.max.idle.ms": "500"})
	ctx := testContext(t)
	// The broker's own registration is in the store once it runs.
	testutil.Eventually(t, 30*time.Second, func() error {
		_, err := tb.b.peers.Request(ctx, 0, "test", kmsg.NewPtrApiVersionsRequest())
		return err
	})
	for _, tc := range []struct {
		name string
		// fresh makes the kept connection look just used, as when the
		// other broker's limit is shorter than this one's: the request
		// then fails on it and goes again on a new connection.
		fresh bool
	}{{"dialed again when stale", false}, {"sent again when closed under it", true}} {
		testutil.Eventually(t, 30*time.Second, func() error {
			if n := tb.b.quotas.open(); n > 0 {
				return fmt.Errorf("%d connections still open", n)
			}
			return nil
		})
		if tc.fresh {
			pc := tb.b.peers.conns[peerKey{0, "test"}]
			pc.mu.Lock()
			pc.lastUsed = time.Now()
			pc.mu.Unlock()
		}
		if _, err := tb.b.peers.Request(ctx, 0, "test", kmsg.NewPtrApiVersionsRequest()); err != nil {
			t.Fatalf("%s: request after the broker closed the idle connection: %v", tc.name, err)
		}
	}
}
