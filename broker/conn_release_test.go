package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// fdsBackTo polls until the process has at most want open files again.
func fdsBackTo(t *testing.T, want int, what string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		if n := openFDs(t); n > want {
			return fmt.Errorf("%s: %d open files, %d before", what, n, want)
		}
		return nil
	})
}

// TestLongPollFetchReleasedOnHangUp sends fetches that would wait ten
// minutes from many clients that then hang up: the broker must notice the
// peers are gone and close their sockets at once, not when the waits end.
func TestLongPollFetchReleasedOnHangUp(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("t", 1, nil)
	before := openFDs(t)
	const clients = 50
	for range clients {
		c := dialProbe(t, tb.addr)
		c.send(longPollFetch("t", 600_000))
		c.c.Close()
	}
	// A little slack for files the broker opens meanwhile (segments, the
	// metadata store), far below one per client.
	fdsBackTo(t, before+5, fmt.Sprintf("%d clients hung up during a long-poll fetch", clients))
}

// TestJoinGroupReleasedOnHangUp has a member wait in JoinGroup for a
// rebalance that cannot end for minutes, then hang up: its connection must
// be released at once.
func TestJoinGroupReleasedOnHangUp(t *testing.T) {
	tb := startBroker(t, nil)
	readyCoordinator(t, tb, "g")
	// The first member stays in the group for five minutes without
	// rejoining, so a rebalance waits for it that long.
	mustJoinTimeouts(t, tb, "g", "", 300_000, 300_000)
	before := openFDs(t)
	c := dialProbe(t, tb.addr)
	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(3)
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", 300_000, 300_000
	join.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	meta := kmsg.NewConsumerMemberMetadata()
	p.Name, p.Metadata = "range", meta.AppendTo(nil)
	join.Protocols = append(join.Protocols, p)
	c.send(join)
	// The broker is holding the join: no answer while the rebalance waits.
	if resp, err := c.recv(join, 300*time.Millisecond); err == nil {
		t.Fatalf("JoinGroup answered at once (%v); the test needs it to wait", resp.(*kmsg.JoinGroupResponse).ErrorCode)
	}
	c.c.Close()
	fdsBackTo(t, before, "a member hung up during JoinGroup")
}

// TestIdleConnectionsClosed checks connections.max.idle.ms: a connection
// with nothing in flight and nothing read for that long is closed, one
// with a request in flight is not.
func TestIdleConnectionsClosed(t *testing.T) {
	tb := startBroker(t, map[string]string{"connections.max.idle.ms": "500"})
	tb.createTopic("t", 1, nil)
	idle := dialProbe(t, tb.addr)
	idle.roundTrip(apiVersionsRequest())
	if err := idle.closedByBroker(30 * time.Second); err != nil {
		t.Fatalf("idle connection: %v", err)
	}
	// A long poll of four idle periods keeps its connection: it is not
	// idle while the request is in flight.
	busy := dialProbe(t, tb.addr)
	fetch := longPollFetch("t", 2000)
	busy.send(fetch)
	if _, err := busy.recv(fetch, 30*time.Second); err != nil {
		t.Fatalf("connection with a fetch in flight: %v", err)
	}
	if err := busy.closedByBroker(30 * time.Second); err != nil {
		t.Fatalf("connection idle after its fetch: %v", err)
	}
}

// TestStalledReaderReleased has a client send fetches for megabytes and
// never read the answers: once the broker's writes make no progress for
// connections.max.idle.ms, the connection is closed and released, rather
// than parked on a full socket forever.
func TestStalledReaderReleased(t *testing.T) {
	tb := startBroker(t, map[string]string{"connections.max.idle.ms": "500"})
	tb.createTopic("big", 1, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.addr), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 256<<10)
	for range 32 {
		if err := cl.ProduceSync(testContext(t), &kgo.Record{Topic: "big", Value: value}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	cl.Close()
	stalled := dialProbe(t, tb.addr)
	for range maxInFlight {
		fetch := longPollFetch("big", 0)
		fetch.MinBytes, fetch.MaxBytes = 1, 8<<20
		fetch.Topics[0].Partitions[0].PartitionMaxBytes = 8 << 20
		stalled.send(fetch)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if n := tb.b.quotas.open(); n > 0 {
			return fmt.Errorf("%d connections open on the broker, the stalled one among them", n)
		}
		return nil
	})
}
