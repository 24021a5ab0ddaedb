package broker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol"
)

// probeConn is one client connection that sends requests and reads answers
// in the protocol's framing, for probes kgo cannot make (pipelining, hanging
// up mid-request, counting connections).
type probeConn struct {
	t    testing.TB
	c    net.Conn
	corr int32
}

func dialProbe(t testing.TB, addr string) *probeConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &probeConn{t: t, c: c}
}

func (r *probeConn) send(req kmsg.Request) {
	r.t.Helper()
	r.corr++
	r.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := r.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, r.corr)); err != nil {
		r.t.Fatalf("send %s: %v", kmsg.NameForKey(req.Key()), err)
	}
}

// recv reads the next answer, which must be to a request like req, within
// timeout.
func (r *probeConn) recv(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	r.c.SetReadDeadline(time.Now().Add(timeout))
	frame, err := protocol.ReadResponseFrame(r.c, nil, 1<<30)
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	body := frame[4:]
	if resp.IsFlexible() && req.Key() != protocol.ApiVersionsKey {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

func (r *probeConn) roundTrip(req kmsg.Request) kmsg.Response {
	r.t.Helper()
	r.send(req)
	resp, err := r.recv(req, 30*time.Second)
	if err != nil {
		r.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

// closedByBroker waits up to timeout for the broker to close the
// connection: a read that ends in EOF or a reset rather than a timeout.
func (r *probeConn) closedByBroker(timeout time.Duration) error {
	r.c.SetReadDeadline(time.Now().Add(timeout))
	var buf [1]byte
	_, err := r.c.Read(buf[:])
	var ne net.Error
	switch {
	case err == nil:
		return errors.New("the broker sent bytes instead of closing")
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("still open after %v", timeout)
	}
	return nil
}

func apiVersionsRequest() *kmsg.ApiVersionsRequest {
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
	return req
}

// longPollFetch asks for a gibibyte of partition 0 and waits up to maxWait
// for it: a fetch that parks until its wait ends.
func longPollFetch(topic string, maxWaitMs int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWaitMs, 1<<30, 1<<20
	req.SessionEpoch = -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 0, 0, 1<<20, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	return req
}

// openFDs counts this process's open file descriptors: client and broker
// sockets alike, since the broker runs in-process.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("count open files: %v", err)
	}
	return len(ents)
}
