package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol"
)

// errCut is what a cut dialer answers: the client's host is unreachable.
var errCut = errors.New("test: connections cut")

// cutDialer dials normally until cut; then it closes every connection it
// made and refuses new ones, so that the broker sees the client's process
// as crashed: no heartbeat, no LeaveGroup.
type cutDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (d *cutDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errCut
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	d.conns = append(d.conns, c)
	return c, nil
}

func (d *cutDialer) cutAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

// rawRoundTrip is tb.roundTrip for goroutines other than the test's: it
// returns errors instead of failing the test. A JoinGroup that waits for
// other members blocks, so tests send it from a goroutine.
func rawRoundTrip(addr string, req kmsg.Request) (kmsg.Response, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, req, 7)); err != nil {
		return nil, err
	}
	// protocol.ReadFrame enforces the minimum size of a request; a v0
	// Heartbeat or LeaveGroup response is only 6 bytes.
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, fmt.Errorf("read %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, frame); err != nil || len(frame) < 4 {
		return nil, fmt.Errorf("read %s response of %d bytes: %v", kmsg.NameForKey(req.Key()), len(frame), err)
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

// waitGroup polls DescribeGroups until ok accepts the group's description,
// and returns that description.
func waitGroup(t *testing.T, adm *kadm.Client, group, what string, ok func(kadm.DescribedGroup) bool) kadm.DescribedGroup {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last kadm.DescribedGroup
	for ; time.Now().Before(deadline); <-tick.C {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		described, err := adm.DescribeGroups(ctx, group)
		cancel()
		if err == nil {
			last = described[group]
			if last.Err == nil && ok(last) {
				return last
			}
		}
	}
	t.Fatalf("group %s never %s; last state %s with %d members (err %v)", group, what, last.State, len(last.Members), last.Err)
	return last
}

// stableWith accepts a Stable group whose members are exactly ids.
func stableWith(ids ...string) func(kadm.DescribedGroup) bool {
	return func(g kadm.DescribedGroup) bool {
		if g.State != "Stable" || len(g.Members) != len(ids) {
			return false
		}
		for _, m := range g.Members {
			if !slices.Contains(ids, m.MemberID) {
				return false
			}
		}
		return true
	}
}

// joinRaw sends a JoinGroup for a consumer-protocol member with one
// "range" protocol and returns the response.
func joinRaw(addr string, version int16, group, memberID string, instanceID *string, sessionMs int32) (*kmsg.JoinGroupResponse, error) {
	return joinRawTimeouts(addr, version, group, memberID, instanceID, sessionMs, 10_000)
}

func joinRawTimeouts(addr string, version int16, group, memberID string, instanceID *string, sessionMs, rebalanceMs int32) (*kmsg.JoinGroupResponse, error) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.InstanceID = group, memberID, instanceID
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = sessionMs, rebalanceMs
	req.ProtocolType = "consumer"
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, p)
	resp, err := rawRoundTrip(addr, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.JoinGroupResponse), nil
}
