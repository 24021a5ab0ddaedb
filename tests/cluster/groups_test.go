package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// offsetsTopic is Kafka's internal topic of group metadata and commits.
const offsetsTopic = "__consumer_offsets"

// groupsConfig is the brokers' config for the group tests: a small
// __consumer_offsets (quick to create and to converge) with RF 3 (from
// brokerConfig), and no unclean elections, so that an acknowledged commit
// can only be lost by the coordinator, not by an election.
func groupsConfig(offsetsPartitions int, extra map[string]string) map[string]string {
	cfg := map[string]string{
		"offsets.topic.num.partitions":   fmt.Sprint(offsetsPartitions),
		"unclean.leader.election.enable": "false",
	}
	maps.Copy(cfg, extra)
	return cfg
}

// groupCoordinators asks the cluster for each group's coordinator until
// every one is named (the first ask creates __consumer_offsets), and
// returns the broker ids.
func (c *cluster) groupCoordinators(adm *kadm.Client, groups ...string) map[string]int32 {
	c.t.Helper()
	out := map[string]int32{}
	testutil.Eventually(c.t, convergeTimeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		for _, r := range adm.FindGroupCoordinators(ctx, groups...) {
			if r.Err != nil {
				return fmt.Errorf("find coordinator of group %s: %w", r.Name, r.Err)
			}
			if !slices.Contains(c.ids, r.NodeID) {
				return fmt.Errorf("group %s: coordinator %d is not a broker of the cluster", r.Name, r.NodeID)
			}
			out[r.Name] = r.NodeID
		}
		if len(out) != len(groups) {
			return fmt.Errorf("coordinators for %d of %d groups", len(out), len(groups))
		}
		return nil
	})
	return out
}

// offsetsReady waits until __consumer_offsets exists on every broker with a
// full ISR, so that a fault in a group test starts from RF 3.
func (c *cluster) offsetsReady(adm *kadm.Client, partitions int, groups ...string) {
	c.t.Helper()
	c.groupCoordinators(adm, groups...)
	c.converge(c.ids, healthy(offsetsTopic, partitions, c.ids))
}

// fetchCommitted asks group's coordinator for the group's committed
// offsets until one answers without error. Each attempt uses a new client:
// franz-go keeps a dead coordinator cached as long as dialing it fails.
func fetchCommitted(bootstrap, group string, timeout time.Duration) (kadm.Offsets, error) {
	var out kadm.Offsets
	err := testutil.Poll(timeout, func() error {
		cl, err := kgo.NewClient(append(clientLog(), kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.DialTimeout(2*time.Second))...)
		if err != nil {
			return fmt.Errorf("client for %s: %w", bootstrap, err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*requestTimeout)
		defer cancel()
		resps, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			return fmt.Errorf("fetch offsets of group %s: %w", group, err)
		}
		out = resps.Offsets()
		return nil
	})
	return out, err
}

// groupMember is one raw-protocol member of a consumer group, talking to
// one broker (the coordinator) through its own client and connection: a
// JoinGroup parked at the coordinator must not hold up anybody else's
// requests.
type groupMember struct {
	group    string
	memberID string
	broker   *kgoBroker
}

// The raw members' timeouts are: long enough that no
// heartbeat is needed while the test kills brokers and waits for the
// controller to notice, so that only the coordinator can break the group.
const (
	memberSessionTimeout   = 120 * time.Second
	memberRebalanceTimeout = 180 * time.Second
)

func newGroupMember(c *cluster, group string, coordinator int32) *groupMember {
	return &groupMember{group: group, broker: newKgoBroker(c.t, c.broker(coordinator).Addr())}
}

// join sends JoinGroup and returns the response. A first join answered
// MEMBER_ID_REQUIRED (KIP-394) is sent again with the member id given.
func (m *groupMember) join(ctx context.Context) (*kmsg.JoinGroupResponse, error) {
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = m.group
		req.MemberID = m.memberID
		req.SessionTimeoutMillis = int32(memberSessionTimeout.Milliseconds())
		req.RebalanceTimeoutMillis = int32(memberRebalanceTimeout.Milliseconds())
		req.ProtocolType = "consumer"
		proto := kmsg.NewJoinGroupRequestProtocol()
		proto.Name = "range"
		proto.Metadata = []byte{0, 0, 0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, proto)
		resp, err := m.broker.request(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("JoinGroup %s as %q: %w", m.group, m.memberID, err)
		}
		jr := resp.(*kmsg.JoinGroupResponse)
		if jr.ErrorCode == kerr.MemberIDRequired.Code && m.memberID == "" {
			m.memberID = jr.MemberID
			continue
		}
		if err := kerr.ErrorForCode(jr.ErrorCode); err != nil {
			return jr, fmt.Errorf("JoinGroup %s as %q: %w", m.group, m.memberID, err)
		}
		m.memberID = jr.MemberID
		return jr, nil
	}
}

// sync sends SyncGroup for generation; the leader assigns nothing to
// everyone it was told of, which is all the protocol needs.
func (m *groupMember) sync(ctx context.Context, generation int32, members []string) error {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group = m.group
	req.Generation = generation
	req.MemberID = m.memberID
	req.ProtocolType = kmsg.StringPtr("consumer")
	req.Protocol = kmsg.StringPtr("range")
	for _, id := range members {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID = id
		req.GroupAssignment = append(req.GroupAssignment, a)
	}
	resp, err := m.broker.request(ctx, req)
	if err != nil {
		return fmt.Errorf("SyncGroup %s gen %d as %q: %w", m.group, generation, m.memberID, err)
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SyncGroupResponse).ErrorCode); err != nil {
		return fmt.Errorf("SyncGroup %s gen %d as %q: %w", m.group, generation, m.memberID, err)
	}
	return nil
}

// describeGroup asks broker for group's state and member ids.
func describeGroup(ctx context.Context, b *kgoBroker, group string) (state string, members []string, err error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := b.request(ctx, req)
	if err != nil {
		return "", nil, fmt.Errorf("DescribeGroups %s: %w", group, err)
	}
	dr := resp.(*kmsg.DescribeGroupsResponse)
	if len(dr.Groups) != 1 {
		return "", nil, fmt.Errorf("DescribeGroups %s: %d groups in the answer", group, len(dr.Groups))
	}
	g := dr.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		return "", nil, fmt.Errorf("DescribeGroups %s: %w", group, err)
	}
	for _, mem := range g.Members {
		members = append(members, mem.MemberID)
	}
	slices.Sort(members)
	return g.State, members, nil
}

// kgoBroker sends raw requests to one broker through a client of its own,
// without the client's retries or coordinator lookups.
type kgoBroker struct {
	cl *kgo.Client
}

func newKgoBroker(t testing.TB, addr string) *kgoBroker {
	t.Helper()
	return &kgoBroker{cl: testutil.Client(t, addr, append(clientLog(), kgo.DialTimeout(2*time.Second))...)}
}

func (b *kgoBroker) request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return b.cl.SeedBrokers()[0].Request(ctx, req)
}
