package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/quota"
)

// setClientQuota sets key for a client id and waits until the broker's
// manager for it has loaded the change notification.
func (tb *testBroker) setClientQuota(ctx context.Context, clientID, key string, value float64, loaded func() *quota.Manager) {
	tb.t.Helper()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = []kmsg.AlterClientQuotasRequestEntry{alterQuotaEntry(map[string]*string{"client-id": kmsg.StringPtr(clientID)}, quotaOp(key, value, false))}
	if resp, err := req.RequestWith(ctx, tb.client()); err != nil || resp.Entries[0].ErrorCode != 0 {
		tb.t.Fatalf("set %s for %s: %v %+v", key, clientID, err, resp)
	}
	testutil.Eventually(tb.t, 30*time.Second, func() error {
		if !loaded().Enabled() {
			return errors.New(key + " not loaded")
		}
		return nil
	})
}

// consumerFetch sends one Fetch of partition 0 of topic from offset.
func consumerFetch(ctx context.Context, tb *testBroker, cl *kgo.Client, topic string, offset int64) *kmsg.FetchResponse {
	tb.t.Helper()
	return consumerFetchWait(ctx, tb, cl, topic, offset, 0)
}

// consumerFetchWait is consumerFetch asking for more than there is, so
// that the fetch waits up to wait (a long poll).
func consumerFetchWait(ctx context.Context, tb *testBroker, cl *kgo.Client, topic string, offset int64, wait time.Duration) *kmsg.FetchResponse {
	t := tb.t
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	if wait > 0 {
		req.MaxWaitMillis, req.MinBytes = int32(wait.Milliseconds()), 1<<30
	}
	req.Version = 12
	req.ReplicaID = -1
	req.MaxBytes = 10 << 20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	if st, ok := tb.b.meta.topic(topic); ok {
		rt.TopicID = st.id // kgo sends the highest version both serve
	}
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 10<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("fetch %s at %d: %v", topic, offset, err)
	}
	return resp
}

func fetchedBytes(resp *kmsg.FetchResponse) int {
	n := 0
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			n += len(p.RecordBatches)
		}
	}
	return n
}

// slowConsumerSetup writes two batches of 64 KiB of random bytes (so that
// they stay 64 KiB) to topic q and gives client id "slow" a
// consumer_byte_rate of 10 KiB/s.
func slowConsumerSetup(ctx context.Context, tb *testBroker) {
	t := tb.t
	t.Helper()
	value := make([]byte, 64<<10)
	rand.Read(value)
	producer := tb.client(kgo.DefaultProduceTopic("q"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := 0; i < 2; i++ {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tb.setClientQuota(ctx, "slow", quota.ConsumerByteRate, 10<<10, func() *quota.Manager { return tb.b.fetchQuota })
}

func TestFetchQuotaThrottles(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("q", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	slowConsumerSetup(ctx, tb)

	// 10 KiB/s over Kafka's 10-window minimum lets 100 KiB through at
	// once, and a fetch asks for no more (KAFKA-9677): the first answer
	// holds one batch, within the quota.
	slow := tb.client(kgo.ClientID("slow"))
	first := consumerFetch(ctx, tb, slow, "q", 0)
	if n := fetchedBytes(first); n < 64<<10 || n >= 128<<10 || first.ThrottleMillis != 0 {
		t.Fatalf("first fetch: %d bytes, throttle %d ms; want one 64 KiB batch, unthrottled", n, first.ThrottleMillis)
	}
	// The second takes it to about 13 KB/s: throttled for about
	// (13.1-10.2)/10.2 x 10 s, and answered empty, as Kafka does.
	second := consumerFetch(ctx, tb, slow, "q", 1)
	if n := len(second.Topics); n != 0 || second.ThrottleMillis < 1500 || second.ThrottleMillis > 4500 {
		t.Fatalf("second fetch: %d topics, throttle %d ms; want none, about 2.8 s", n, second.ThrottleMillis)
	}
	// The empty answer took its bytes back: on another connection (the
	// first is muted) the same fetch is throttled for the same time, not
	// for three batches' worth (about 9 s).
	again := consumerFetch(ctx, tb, tb.client(kgo.ClientID("slow")), "q", 1)
	if len(again.Topics) != 0 || again.ThrottleMillis < 1500 || again.ThrottleMillis > 4500 {
		t.Errorf("refetch: %d topics, throttle %d ms; want none, about 2.8 s", len(again.Topics), again.ThrottleMillis)
	}
	// A client without a quota gets everything at once.
	fast := consumerFetch(ctx, tb, tb.client(kgo.ClientID("fast")), "q", 0)
	if n := fetchedBytes(fast); n < 128<<10 || fast.ThrottleMillis != 0 {
		t.Errorf("unlimited fetch: %d bytes, throttle %d ms; want both batches, unthrottled", n, fast.ThrottleMillis)
	}
}

// request_percentage: a client over it is told throttle_time_ms in any
// response with the field, bounded to one quota window (1 s), and a
// throttled Fetch is answered empty.
func TestRequestQuotaThrottles(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("q", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	producer := tb.client(kgo.DefaultProduceTopic("q"))
	if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A millionth of a percent: any request at all is over it.
	tb.setClientQuota(ctx, "busy", quota.RequestPercentage, 1e-6, func() *quota.Manager { return tb.b.requestQuota })

	for _, req := range []kmsg.Request{kmsg.NewPtrMetadataRequest(), kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrListGroupsRequest()} {
		// A new client each time: the connection is muted after each.
		resp, err := tb.client(kgo.ClientID("busy")).Request(ctx, req)
		if err != nil {
			t.Fatalf("%T: %v", req, err)
		}
		if got, _ := resp.(kmsg.ThrottleResponse).Throttle(); got != 1000 {
			t.Errorf("%T: throttle %d ms, want the 1000 ms bound", req, got)
		}
		resp, err = tb.client(kgo.ClientID("free")).Request(ctx, req)
		if err != nil {
			t.Fatalf("%T: %v", req, err)
		}
		if got, _ := resp.(kmsg.ThrottleResponse).Throttle(); got != 0 {
			t.Errorf("%T from an unlimited client: throttle %d ms", req, got)
		}
	}
	f := consumerFetch(ctx, tb, tb.client(kgo.ClientID("busy")), "q", 0)
	if len(f.Topics) != 0 || f.ThrottleMillis != 1000 {
		t.Errorf("fetch over the request quota: %d topics, throttle %d ms; want an empty answer, 1000 ms", len(f.Topics), f.ThrottleMillis)
	}
	// Answered after a long poll, the same.
	f = consumerFetchWait(ctx, tb, tb.client(kgo.ClientID("busy")), "q", 0, 200*time.Millisecond)
	if len(f.Topics) != 0 || f.ThrottleMillis != 1000 {
		t.Errorf("long-poll fetch over the request quota: %d topics, throttle %d ms; want an empty answer, 1000 ms", len(f.Topics), f.ThrottleMillis)
	}
	if f := consumerFetchWait(ctx, tb, tb.client(kgo.ClientID("free")), "q", 0, 200*time.Millisecond); fetchedBytes(f) == 0 || f.ThrottleMillis != 0 {
		t.Errorf("unlimited long-poll fetch: %d bytes, throttle %d ms", fetchedBytes(f), f.ThrottleMillis)
	}
	if f := consumerFetch(ctx, tb, tb.client(kgo.ClientID("free")), "q", 0); fetchedBytes(f) == 0 || f.ThrottleMillis != 0 {
		t.Errorf("unlimited fetch: %d bytes, throttle %d ms", fetchedBytes(f), f.ThrottleMillis)
	}
}

// Kafka exempts from the request quota the cluster actions of brokers
// allowed them (replica fetches, LeaderAndIsr, WriteTxnMarkers, ...);
// what a SASL connection sends before it is authenticated never counts.
func TestRequestQuotaExempt(t *testing.T) {
	for _, tc := range []struct {
		key          int16
		fromFollower bool
		want         bool
	}{
		{key: 3},
		{key: 18},
		{key: 1},
		{key: 1, fromFollower: true, want: true},
		{key: 4, want: true},
		{key: 7, want: true},
		{key: 27, want: true},
		{key: 56, want: true},
		{key: 23},
	} {
		if got := clusterActionExempt(tc.key, tc.fromFollower); got != tc.want {
			t.Errorf("key %d follower %v: exempt %v, want %v", tc.key, tc.fromFollower, got, tc.want)
		}
	}
}

// A throttled fetch is answered empty and leaves fetch sessions as they
// were, as Kafka's getThrottledResponse: a full fetch gets no session, and
// an incremental one keeps its id without remembering what it did not send.
func TestFetchSessionThrottled(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("q", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	producer := tb.client(kgo.DefaultProduceTopic("q"))
	produce := func() {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce()
	tb.setClientQuota(ctx, "busy", quota.RequestPercentage, 1e-6, func() *quota.Manager { return tb.b.requestQuota })
	fetch := func(clientID string, id, epoch int32, offset int64, list bool) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes = -1, 1<<20
		req.SessionID, req.SessionEpoch = id, epoch
		if list {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "q"
			if st, ok := tb.b.meta.topic("q"); ok {
				rt.TopicID = st.id // kgo sends the highest version both serve
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, tb.client(kgo.ClientID(clientID)))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	sessions := func() int {
		tb.b.fetchSessions.mu.Lock()
		defer tb.b.fetchSessions.mu.Unlock()
		return len(tb.b.fetchSessions.cache.sessions)
	}

	if resp := fetch("busy", 0, 0, 0, true); resp.SessionID != 0 || len(resp.Topics) != 0 || resp.ThrottleMillis == 0 {
		t.Fatalf("throttled full fetch: session %d, %d topics, throttle %d ms; want no session, empty, throttled", resp.SessionID, len(resp.Topics), resp.ThrottleMillis)
	}
	if n := sessions(); n != 0 {
		t.Fatalf("a throttled full fetch left %d sessions", n)
	}
	full := fetch("free", 0, 0, 0, true)
	if full.SessionID == 0 || len(full.Topics) != 1 {
		t.Fatalf("full fetch: session %d, %d topics", full.SessionID, len(full.Topics))
	}
	// The high watermark moves to 2; the throttled incremental fetch
	// (offset 2: no records, only the new high watermark) sends nothing,
	// so the next one must still carry the partition.
	produce()
	if resp := fetch("busy", full.SessionID, 1, 2, true); resp.SessionID != full.SessionID || len(resp.Topics) != 0 || resp.ThrottleMillis == 0 {
		t.Fatalf("throttled incremental fetch: session %d (want %d), %d topics, throttle %d ms", resp.SessionID, full.SessionID, len(resp.Topics), resp.ThrottleMillis)
	}
	next := fetch("free", full.SessionID, 2, 0, false)
	if next.ErrorCode != 0 || len(next.Topics) != 1 || next.Topics[0].Partitions[0].HighWatermark != 2 {
		t.Fatalf("incremental fetch after the throttled one: error %d, topics %+v; want partition 0 with high watermark 2", next.ErrorCode, next.Topics)
	}
}

// A full fetch that opens a session (epoch 0) counts its whole answer
// against consumer_byte_rate, as a sessionless one does: the second 64 KiB
// batch at 10 KiB/s is throttled.
func TestFetchQuotaCountsSessionFullFetch(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("q", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	slowConsumerSetup(ctx, tb)
	fetch := func(offset int64) *kmsg.FetchResponse {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 10<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "q"
		if st, ok := tb.b.meta.topic("q"); ok {
			rt.TopicID = st.id // kgo sends the highest version both serve
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = offset, 10<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, tb.client(kgo.ClientID("slow")))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if first := fetch(0); fetchedBytes(first) < 64<<10 || first.ThrottleMillis != 0 {
		t.Fatalf("first full fetch: %d bytes, throttle %d ms; want one 64 KiB batch, unthrottled", fetchedBytes(first), first.ThrottleMillis)
	}
	if second := fetch(1); len(second.Topics) != 0 || second.ThrottleMillis < 1500 {
		t.Fatalf("second full fetch: %d topics, throttle %d ms; want none, about 2.8 s", len(second.Topics), second.ThrottleMillis)
	}
}
