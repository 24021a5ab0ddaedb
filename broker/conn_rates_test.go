package broker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// fakePauses stands in for the connection quotas' clock and pause: a
// pause is recorded and moves the clock at once.
type fakePauses struct {
	clock *testutil.Clock
	mu    sync.Mutex
	got   []time.Duration
}

func (f *fakePauses) sleep(_ context.Context, d time.Duration) bool {
	f.mu.Lock()
	f.got = append(f.got, d)
	f.mu.Unlock()
	f.clock.Advance(d)
	return true
}

func (f *fakePauses) pauses() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

func startBrokerWithPauses(t *testing.T, overrides map[string]string) (*testBroker, *fakePauses) {
	f := &fakePauses{clock: testutil.NewClock(time.UnixMilli(1_000_000_000))}
	tb := startBrokerWith(t, overrides, func(b *Broker) {
		b.quotas.creation.now = f.clock.Now
		b.quotas.creation.sleep = f.sleep
	})
	return tb, f
}

// max.connection.creation.rate broker-wide and per listener: once over
// it the acceptor pauses, for (rate-limit)/limit of the rate's window and
// at most one window, and the connection is then served.
func TestConnectionCreationRate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		free  int // connections accepted before the first pause
		pause time.Duration
	}{
		// 20 connections at once are 2/s over the young rate's 10 s; the
		// 21st is 2.1/s, 500 ms over.
		{"broker-wide", map[string]string{"max.connection.creation.rate": "2"}, 20, 500 * time.Millisecond},
		// 1.1/s against 1/s: 1 s, the bound.
		{"listener", map[string]string{"listener.name.plaintext.max.connection.creation.rate": "1"}, 10, time.Second},
		{"listener over broker-wide", map[string]string{"max.connection.creation.rate": "1000", "listener.name.plaintext.max.connection.creation.rate": "1"}, 10, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, f := startBrokerWithPauses(t, tc.props)
			servedProbes(t, tb.addr, tc.free)
			if got := f.pauses(); len(got) != 0 {
				t.Fatalf("paused %v within the rate", got)
			}
			servedProbes(t, tb.addr, 1)
			if got := f.pauses(); len(got) != 1 || got[0] != tc.pause {
				t.Errorf("pauses %v, want [%v]", got, tc.pause)
			}
		})
	}
}

// The ip quota entity (KIP-612): stored as Kafka's ZooKeeper mode does,
// described, and applied to new connections: past the address's
// connection_creation_rate a connection is closed, after its throttle.
func TestIPConnectionCreationRate(t *testing.T) {
	tb, f := startBrokerWithPauses(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set := kmsg.NewPtrAlterClientQuotasRequest()
	set.Entries = append(set.Entries,
		alterQuotaEntry(map[string]*string{"ip": kmsg.StringPtr("127.0.0.1")}, quotaOp("connection_creation_rate", 2, false)),
		alterQuotaEntry(map[string]*string{"ip": nil}, quotaOp("connection_creation_rate", 50, false)),
		alterQuotaEntry(map[string]*string{"ip": kmsg.StringPtr("127.0.0.1"), "user": kmsg.StringPtr("u")}, quotaOp("connection_creation_rate", 2, false)),
		alterQuotaEntry(map[string]*string{"ip": kmsg.StringPtr("not-an-address.invalid")}, quotaOp("connection_creation_rate", 2, false)),
		alterQuotaEntry(map[string]*string{"ip": kmsg.StringPtr("10.0.0.1")}, quotaOp("producer_byte_rate", 2, false)),
		alterQuotaEntry(map[string]*string{"ip": kmsg.StringPtr("10.0.0.1")}, quotaOp("connection_creation_rate", 2.5, false)),
	)
	resp := tb.roundTrip(set).(*kmsg.AlterClientQuotasResponse)
	var codes []int16
	for _, e := range resp.Entries {
		codes = append(codes, e.ErrorCode)
	}
	if want := []int16{0, 0, 42, 42, 42, 42}; !slices.Equal(codes, want) {
		t.Fatalf("alter codes %v, want %v", codes, want)
	}
	for path, want := range map[string]string{
		"/config/ips/127.0.0.1": `{"version":1,"config":{"connection_creation_rate":"2"}}`,
		"/config/ips/<default>": `{"version":1,"config":{"connection_creation_rate":"50"}}`,
	} {
		raw, _, err := tb.b.store.Get(ctx, path)
		if err != nil || string(raw) != want {
			t.Errorf("%s: %s %v, want %s", path, raw, err, want)
		}
	}
	describe := kmsg.NewPtrDescribeClientQuotasRequest()
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType, c.Match = "ip", 0, kmsg.StringPtr("127.0.0.1")
	describe.Components = append(describe.Components, c)
	dr := tb.roundTrip(describe).(*kmsg.DescribeClientQuotasResponse)
	if dr.ErrorCode != 0 || len(dr.Entries) != 1 || len(dr.Entries[0].Entity) != 1 || dr.Entries[0].Entity[0].Type != "ip" ||
		len(dr.Entries[0].Values) != 1 || dr.Entries[0].Values[0].Key != "connection_creation_rate" || dr.Entries[0].Values[0].Value != 2 {
		t.Errorf("describe ip 127.0.0.1: %+v", dr)
	}
	// An ip component with a user one is refused, as in Kafka.
	u := kmsg.NewDescribeClientQuotasRequestComponent()
	u.EntityType, u.MatchType = "user", 2
	describe.Components = append(describe.Components, u)
	if dr := tb.roundTrip(describe).(*kmsg.DescribeClientQuotasResponse); dr.ErrorCode != 42 {
		t.Errorf("describe ip and user: code %d, want INVALID_REQUEST", dr.ErrorCode)
	}

	testutil.Eventually(t, 30*time.Second, func() error {
		tb.b.quotas.mu.Lock()
		defer tb.b.quotas.mu.Unlock()
		if tb.b.quotas.creation.ips.IPLimit("127.0.0.1") != 2 {
			return errors.New("ip quota not loaded")
		}
		return nil
	})
	// A window on, the connections above no longer count. 20 connections
	// are 2/s over the young rate's 10 s; the 21st is over it, refused
	// and closed once its 500 ms throttle is over.
	f.clock.Advance(12 * time.Second)
	servedProbes(t, tb.addr, 20)
	refused := dialProbe(t, tb.addr)
	refused.send(apiVersionsRequest())
	if err := refused.closedByBroker(30 * time.Second); err != nil {
		t.Fatalf("connection over the ip rate: %v", err)
	}
	if got := f.pauses(); !slices.Contains(got, 500*time.Millisecond) {
		t.Errorf("pauses %v, want the 500 ms throttle before the close", got)
	}
	// Refused connections are not counted: the throttle's pause moved
	// the clock 500 ms, so 21 connections over 10.5 s are within 2/s and
	// the next is served; had the refused one counted, 22 would not be.
	servedProbes(t, tb.addr, 1)
}
