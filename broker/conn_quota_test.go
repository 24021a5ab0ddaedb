package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// notServed is how long a probe waits to see that the broker does not
// answer. It can only make a broken limit look fine, never a working one
// fail.
const notServed = 300 * time.Millisecond

// servedProbes opens n connections and completes an ApiVersions on each.
func servedProbes(t *testing.T, addr string, n int) []*probeConn {
	t.Helper()
	out := make([]*probeConn, n)
	for i := range out {
		out[i] = dialProbe(t, addr)
		out[i].roundTrip(apiVersionsRequest())
	}
	return out
}

// waitingProbes opens n connections past a limit and sends an ApiVersions
// on each, which must not be answered yet.
func waitingProbes(t *testing.T, addr string, n int) []*probeConn {
	t.Helper()
	out := make([]*probeConn, n)
	for i := range out {
		out[i] = dialProbe(t, addr)
		out[i].send(apiVersionsRequest())
	}
	for i, c := range out {
		if _, err := c.recv(apiVersionsRequest(), notServed); err == nil {
			t.Fatalf("connection %d past the limit was served", i)
		}
	}
	return out
}

func answered(t *testing.T, probes []*probeConn, what string) {
	t.Helper()
	for i, c := range probes {
		if _, err := c.recv(apiVersionsRequest(), 30*time.Second); err != nil {
			t.Fatalf("%s: connection %d: %v", what, i, err)
		}
	}
}

// TestMaxConnections checks max.connections as Kafka applies it: past the
// limit the broker stops accepting, and the connections waiting in the
// backlog are served as soon as others close.
func TestMaxConnections(t *testing.T) {
	tb := startBroker(t, map[string]string{"max.connections": "5"})
	first := servedProbes(t, tb.addr, 5)
	extra := waitingProbes(t, tb.addr, 3)
	for _, c := range first[:3] {
		c.c.Close()
	}
	answered(t, extra, "after three connections closed")
}

// TestMaxConnectionsDynamic raises max.connections at runtime, as the
// cluster-wide dynamic config it is in Kafka: connections waiting for a
// slot are let in without any other closing.
func TestMaxConnectionsDynamic(t *testing.T) {
	tb := startBroker(t, map[string]string{"max.connections": "2"})
	servedProbes(t, tb.addr, 2)
	extra := waitingProbes(t, tb.addr, 2)
	v := "4"
	code, msg := tb.b.alterBrokerConfigs(context.Background(), "", []configChange{{name: "max.connections", op: kmsg.IncrementalAlterConfigOpSet, value: &v}}, false, false)
	if code != 0 {
		t.Fatalf("set max.connections=4: %d %s", code, msg)
	}
	answered(t, extra, "after max.connections rose to 4")
}

// TestMaxConnectionsPerIP checks that a connection beyond
// max.connections.per.ip is closed at once, and that
// max.connections.per.ip.overrides gives an address its own limit.
func TestMaxConnectionsPerIP(t *testing.T) {
	for _, tc := range []struct {
		name    string
		props   map[string]string
		allowed int
	}{
		{"default", map[string]string{"max.connections.per.ip": "2"}, 2},
		{"override", map[string]string{"max.connections.per.ip": "1", "max.connections.per.ip.overrides": "10.1.1.1:7,127.0.0.1:3"}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := startBroker(t, tc.props)
			served := servedProbes(t, tb.addr, tc.allowed)
			over := dialProbe(t, tb.addr)
			if err := over.closedByBroker(30 * time.Second); err != nil {
				t.Fatalf("connection %d from 127.0.0.1: %v", tc.allowed+1, err)
			}
			// A slot freed is a slot for the next one.
			served[0].c.Close()
			deadline := time.Now().Add(30 * time.Second)
			for {
				c := dialProbe(t, tb.addr)
				c.send(apiVersionsRequest())
				if _, err := c.recv(apiVersionsRequest(), 30*time.Second); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no connection served after one closed")
				}
			}
		})
	}
}

// TestQueuedMaxRequests fills the broker-wide request queue
// (queued.max.requests=1) behind a handler that blocks, and checks that
// other connections then wait instead of being served, until the queue
// drains.
func TestQueuedMaxRequests(t *testing.T) {
	tb := startBroker(t, map[string]string{"queued.max.requests": "1"})
	// The Metadata behind the blocked JoinGroup is read and queued.
	blocker := blockedConn(t, tb)
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 4
	blocker.send(md)
	queuedAtLeast(t, tb, 1, 0)
	waiting := waitingProbes(t, tb.addr, 1)
	blocker.c.Close()
	answered(t, waiting, "after the queue drained")
}

// blockedConn returns a connection whose handler is held by a JoinGroup
// that waits minutes for another member to rejoin; requests sent after it
// are read and queued but not handled.
func blockedConn(t *testing.T, tb *testBroker) *probeConn {
	t.Helper()
	readyCoordinator(t, tb, "g")
	mustJoinTimeouts(t, tb, "g", "", 300_000, 300_000)
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
	if _, err := c.recv(join, notServed); err == nil {
		t.Fatalf("JoinGroup answered at once; the test needs it to wait")
	}
	return c
}

// TestQueuedMaxRequestBytes fills queued.max.request.bytes with one large
// frame queued behind a blocked handler: other connections then wait, and
// are served once it drains.
func TestQueuedMaxRequestBytes(t *testing.T) {
	const limit = 1 << 20
	tb := startBroker(t, map[string]string{"queued.max.request.bytes": fmt.Sprint(limit), "socket.request.max.bytes": fmt.Sprint(limit)})
	blocker := blockedConn(t, tb)
	// A frame of the whole limit; never decoded, since it is discarded
	// when its connection closes.
	frame := binary.BigEndian.AppendUint32(nil, limit)
	frame = append(frame, make([]byte, limit)...)
	blocker.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := blocker.c.Write(frame); err != nil {
		t.Fatalf("send a large frame: %v", err)
	}
	queuedAtLeast(t, tb, 1, limit)
	waiting := waitingProbes(t, tb.addr, 1)
	blocker.c.Close()
	answered(t, waiting, "after the queued bytes drained")
}

// TestInterBrokerListenerProtected checks that with more than one
// listener, connections on the inter-broker listener are let in past
// max.connections, closing the least recently used client connection, as
// Kafka protects them so that the cluster keeps working when clients use
// up the slots.
func TestInterBrokerListenerProtected(t *testing.T) {
	tb := startBroker(t, map[string]string{
		"max.connections":                "1",
		"listeners":                      "CLIENT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
		"listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT",
		"inter.broker.listener.name":     "INTERNAL",
	})
	internal := tb.b.Addrs()[1].String()
	client := servedProbes(t, tb.addr, 1)[0]
	waiting := waitingProbes(t, tb.addr, 1)
	servedProbes(t, internal, 1)
	// The least recently used connection of another listener makes room,
	// as in Kafka; the one waiting in the backlog still waits.
	if err := client.closedByBroker(30 * time.Second); err != nil {
		t.Fatalf("client connection after an inter-broker one past the limit: %v", err)
	}
	if _, err := waiting[0].recv(apiVersionsRequest(), notServed); err == nil {
		t.Fatalf("a client connection past the limit was served")
	}
}

// queuedAtLeast waits until the broker's request queue holds at least n
// requests and bytes bytes: what the test sent has been read.
func queuedAtLeast(t *testing.T, tb *testBroker, n int, bytes int64) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() error {
		if gotN, gotBytes := tb.b.requests.queued(); gotN < n || gotBytes < bytes {
			return fmt.Errorf("%d requests and %d bytes queued, want %d and %d", gotN, gotBytes, n, bytes)
		}
		return nil
	})
}
