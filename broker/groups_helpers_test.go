package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
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

// rawRoundTrip sends req at its set version over a fresh connection and
// reads the response, bypassing kgo, which rewrites some requests (acks).
// It returns errors instead of failing the test, for goroutines other than
// the test's: a JoinGroup that waits for other members blocks, so tests
// send it from a goroutine.
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
	frame, err := protocol.ReadResponseFrame(c, nil, 1<<30)
	if err != nil {
		return nil, fmt.Errorf("read %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	resp := req.ResponseKind()
	body := frame[4:]
	if resp.IsFlexible() && req.Key() != protocol.ApiVersionsKey {
		body = body[1:] // the empty tagged fields of response header v1
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

// readyCoordinator waits until the broker coordinates group: FindCoordinator
// answers with a node and the offsets partition is loaded.
func readyCoordinator(t *testing.T, tb *testBroker, group string) {
	t.Helper()
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.SetVersion(3)
	find.CoordinatorKey = group
	describe := kmsg.NewPtrDescribeGroupsRequest()
	describe.SetVersion(5)
	describe.Groups = []string{group}
	deadline := time.Now().Add(30 * time.Second)
	for {
		fc := tb.roundTrip(find).(*kmsg.FindCoordinatorResponse)
		if fc.ErrorCode == 0 && tb.roundTrip(describe).(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("coordinator for %s never ready: %v", group, kerr.ErrorForCode(fc.ErrorCode))
		}
	}
}

func mustJoin(t *testing.T, tb *testBroker, version int16, group, memberID string, instanceID *string) *kmsg.JoinGroupResponse {
	t.Helper()
	resp, err := joinRaw(tb.addr, version, group, memberID, instanceID, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// joinMember joins a new dynamic member at v3 (no member id round trip) and
// completes its SyncGroup as leader; the group is then Stable.
func joinMember(t *testing.T, tb *testBroker, group string) (string, int32) {
	t.Helper()
	j := mustJoin(t, tb, 3, group, "", nil)
	wantCode(t, "join "+group, j.ErrorCode, noError)
	s := syncRaw(t, tb, 3, group, j.MemberID, nil, j.Generation, map[string][]byte{j.MemberID: {}})
	wantCode(t, "sync "+group, s.ErrorCode, noError)
	return j.MemberID, j.Generation
}

func syncRaw(t *testing.T, tb *testBroker, version int16, group, memberID string, instanceID *string, generation int32, assign map[string][]byte) *kmsg.SyncGroupResponse {
	t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.InstanceID, req.Generation = group, memberID, instanceID, generation
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	return tb.roundTrip(req).(*kmsg.SyncGroupResponse)
}

func heartbeatRaw(t *testing.T, tb *testBroker, version int16, group, memberID string, instanceID *string, generation int32) int16 {
	t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.InstanceID, req.Generation = group, memberID, instanceID, generation
	return tb.roundTrip(req).(*kmsg.HeartbeatResponse).ErrorCode
}

// commitRaw commits offset o (leader epoch 5, metadata meta) for partitions
// 0..len(offsets)-1 of topic "t" and returns the partitions' codes.
func commitRaw(t *testing.T, tb *testBroker, version int16, group, memberID string, instanceID *string, generation int32, meta string, offsets ...int64) []int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(version)
	req.Group, req.MemberID, req.InstanceID, req.Generation = group, memberID, instanceID, generation
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t"
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = int32(p), o, 5, kmsg.StringPtr(meta)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp := tb.roundTrip(req).(*kmsg.OffsetCommitResponse)
	var codes []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			codes = append(codes, p.ErrorCode)
		}
	}
	return codes
}

func wantCodes(t *testing.T, what string, got []int16, n int, want *kerr.Error) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%s: %d partition answers, want %d", what, len(got), n)
	}
	for _, c := range got {
		wantCode(t, what, c, want)
	}
}

// noError is what wantCode expects of a request that succeeds.
var noError = &kerr.Error{Message: "NONE", Code: 0}
