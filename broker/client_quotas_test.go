package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/quota"
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

// A quota change notification patches the one entity it names: a set
// adds it, a removal takes it out, and the other entities stay.
func TestClientQuotaChangesPatchTable(t *testing.T) {
	tb := startBroker(t, nil)
	alter := func(entity map[string]*string, op kmsg.AlterClientQuotasRequestEntryOp) {
		t.Helper()
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Entries = append(req.Entries, alterQuotaEntry(entity, op))
		if resp := tb.roundTrip(req).(*kmsg.AlterClientQuotasResponse); resp.Entries[0].ErrorCode != 0 {
			t.Fatalf("alter %v: %+v", entity, resp.Entries[0])
		}
	}
	waitTable := func(want quota.Table) {
		t.Helper()
		testutil.Eventually(t, 30*time.Second, func() error {
			got := tb.b.produceQuota.Table()
			if !reflect.DeepEqual(got, want) {
				return fmt.Errorf("table %v, want %v", got, want)
			}
			return nil
		})
	}
	pair := map[string]*string{"user": kmsg.StringPtr("alice"), "client-id": kmsg.StringPtr("c 1")}
	client := map[string]*string{"client-id": kmsg.StringPtr("c2")}
	alter(pair, quotaOp("producer_byte_rate", 1000, false))
	alter(client, quotaOp("consumer_byte_rate", 2000, false))
	pairEntity := quota.Entity{User: quota.Named("alice"), Client: quota.Named("c 1")}
	clientEntity := quota.Entity{Client: quota.Named("c2")}
	waitTable(quota.Table{pairEntity: {"producer_byte_rate": 1000}, clientEntity: {"consumer_byte_rate": 2000}})
	if !tb.b.produceQuota.Enabled() {
		t.Error("producer_byte_rate set but not enabled")
	}
	alter(pair, quotaOp("producer_byte_rate", 0, true))
	waitTable(quota.Table{clientEntity: {"consumer_byte_rate": 2000}})
	if tb.b.produceQuota.Enabled() {
		t.Error("producer_byte_rate removed but still enabled")
	}
}
