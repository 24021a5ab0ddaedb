package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// throttleHook records the throttles a broker reports to a franz-go client.
type throttleHook struct {
	mu  sync.Mutex
	got []time.Duration
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	h.got = append(h.got, d)
	h.mu.Unlock()
}

func (h *throttleHook) throttles() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.got...)
}

func TestProduceQuotaThrottles(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("q", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = []kmsg.AlterClientQuotasRequestEntry{alterQuotaEntry(map[string]*string{"client-id": kmsg.StringPtr("slow")}, quotaOp("producer_byte_rate", 1024, false))}
	if resp, err := req.RequestWith(ctx, tb.client()); err != nil || resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("set quota: %v %+v", err, resp)
	}
	// The watcher loads the quota from the change notification.
	testutil.Eventually(t, 30*time.Second, func() error {
		if !tb.b.produceQuota.Enabled() {
			return errors.New("producer quota not loaded")
		}
		return nil
	})

	// Random bytes, since the quota counts the bytes sent, compressed.
	value := make([]byte, 64<<10)
	rand.Read(value)
	produce := func(clientID string) []time.Duration {
		t.Helper()
		h := &throttleHook{}
		cl := tb.client(kgo.ClientID(clientID), kgo.WithHooks(h), kgo.DefaultProduceTopic("q"))
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatalf("produce as %s: %v", clientID, err)
		}
		return h.throttles()
	}
	// 64 KiB against 1 KiB/s over Kafka's 10-window minimum: about
	// (6.5 KB/s - 1 KB/s) / 1 KB/s x 10 s.
	got := produce("slow")
	if len(got) != 1 || got[0] < 40*time.Second || got[0] > 70*time.Second {
		t.Errorf("slow client throttles %v, want one of about 54s", got)
	}
	if got := produce("fast"); len(got) != 0 {
		t.Errorf("unlimited client throttled %v", got)
	}
}
