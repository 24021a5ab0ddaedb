package cluster

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

const offsetsTopic = "__consumer_offsets"

// TestCoordinatorKill9KeepsCommits kills a group coordinator with SIGKILL
// right after it acknowledged offset commits. A commit is acknowledged once
// the followers have its record, but with replica.fetch.wait.max.ms=5000
// they learn the high watermark that covers it up to five seconds later,
// so the new leader's high watermark trails its log end: the new
// coordinator must load to the log end, as Kafka's does, or the commits
// acknowledged last are lost.
func TestCoordinatorKill9KeepsCommits(t *testing.T) {
	const groups, topic = 12, "commits"
	c, adm, ctx := startGroupsCluster(t, map[string]string{"replica.fetch.wait.max.ms": "5000"})
	c.createTopic(topic, 1, nil)
	names := make([]string, groups)
	for i := range names {
		names[i] = fmt.Sprintf("kill9-group-%d", i)
	}
	commit := func(group string, at int64) error {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: at, LeaderEpoch: -1})
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		resp, err := adm.CommitOffsets(rctx, group, os)
		if err == nil {
			err = resp.Error()
		}
		return err
	}
	for _, g := range names {
		testutil.Eventually(t, convergeTimeout, func() error { return commit(g, 1) })
	}

	coordinator := map[string]int32{}
	testutil.Eventually(t, convergeTimeout, func() error {
		for _, r := range adm.FindGroupCoordinators(ctx, names...) {
			if r.Err != nil {
				return fmt.Errorf("coordinator of %s: %w", r.Name, r.Err)
			}
			coordinator[r.Name] = r.NodeID
		}
		return nil
	})
	victim := coordinator[names[0]]

	// The victim's groups commit last, so that their records are the ones
	// whose high watermark the followers have not heard of when it dies.
	want := map[string]int64{}
	var last []string
	for i, g := range names {
		want[g] = int64(100 + i)
		if coordinator[g] == victim {
			last = append(last, g)
			continue
		}
		if err := commit(g, want[g]); err != nil {
			t.Fatalf("commit %s: %v", g, err)
		}
	}
	for _, g := range last {
		if err := commit(g, want[g]); err != nil {
			t.Fatalf("commit %s: %v", g, err)
		}
	}
	c.kill9(victim)
	t.Logf("killed coordinator %d of %v right after their commits", victim, last)

	live := c.others(victim)
	c.converge(live, func(v clusterView) error {
		return v.checkTopicHealthy(offsetsTopic, groupsPartitions, 3, live, false)
	})
	// A new client: the old one keeps the dead coordinator cached.
	var seeds []string
	for _, id := range live {
		seeds = append(seeds, c.broker(id).Addr())
	}
	after := kadm.NewClient(testutil.Client(t, strings.Join(seeds, ",")))
	for _, g := range names {
		var got int64 = -1
		testutil.Eventually(t, convergeTimeout, func() error {
			rctx, cancel := context.WithTimeout(ctx, requestTimeout)
			defer cancel()
			resp, err := after.FetchOffsets(rctx, g)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				return fmt.Errorf("fetch offsets of %s: %w", g, err)
			}
			o, ok := resp.Lookup(topic, 0)
			if !ok {
				got = -1
				return nil
			}
			got = o.At
			return nil
		})
		if got != want[g] {
			t.Errorf("group %s (coordinator %d before the kill): committed offset %d after failover, want %d", g, coordinator[g], got, want[g])
		}
	}
}

// TestRebalanceSurvivesControllerKill9 kills, with SIGKILL, the controller
// while it follows the __consumer_offsets partition of a group that is
// rebalancing: the new controller takes it out of the partition's ISR
// (leader epoch bump) and resends its decisions to every broker. Neither
// makes the coordinator a new leader, so, as in Kafka, the JoinGroup that
// waits in the rebalance is not failed with NOT_COORDINATOR: it completes
// when the other member rejoins.
func TestRebalanceSurvivesControllerKill9(t *testing.T) {
	c, adm, ctx := startGroupsCluster(t, nil)
	controller := c.controller()
	group, coordinator := groupCoordinated(t, ctx, adm, "rebalancing", func(id int32) bool { return id != controller })

	// Each member has its own connection: a waiting JoinGroup holds its
	// connection's later requests.
	a, b := c.brokerClient(coordinator), c.brokerClient(coordinator)
	join := func(br *kgo.Broker, memberID string) (*kmsg.JoinGroupResponse, error) {
		return rawJoin(ctx, br, group, memberID)
	}
	ja, err := join(a, "")
	if err != nil || ja.ErrorCode != 0 {
		t.Fatalf("first member's join: %v %+v", err, ja)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = group, ja.MemberID, ja.Generation
	if resp, err := a.Request(ctx, sync); err != nil || resp.(*kmsg.SyncGroupResponse).ErrorCode != 0 {
		t.Fatalf("first member's sync: %v %+v", err, resp)
	}

	// A second member starts a rebalance, waiting for the first to rejoin.
	type joined struct {
		resp *kmsg.JoinGroupResponse
		err  error
	}
	waiting := make(chan joined, 1)
	go func() {
		r, err := join(b, "")
		waiting <- joined{r, err}
	}()
	describe := func() (string, error) {
		d, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return "", err
		}
		return d[group].State, d[group].Err
	}
	testutil.Eventually(t, convergeTimeout, func() error {
		if s, err := describe(); err != nil || s != "PreparingRebalance" {
			return fmt.Errorf("group %s: state %q, %v; want PreparingRebalance", group, s, err)
		}
		return nil
	})

	c.kill9(controller)
	live := c.others(controller)
	c.converge(live, func(v clusterView) error {
		if v.Controller == controller {
			return fmt.Errorf("controller is still the killed broker %d", controller)
		}
		return v.checkTopicHealthy(offsetsTopic, groupsPartitions, 3, live, false)
	})
	t.Logf("group %s on broker %d; controller %d killed", group, coordinator, controller)
	select {
	case j := <-waiting:
		t.Fatalf("waiting join answered during the failover: %v %+v", j.err, j.resp)
	default:
	}
	if s, err := describe(); err != nil || s != "PreparingRebalance" {
		t.Fatalf("group %s after the failover: state %q, %v; want PreparingRebalance", group, s, err)
	}

	// The first member rejoins: the rebalance completes for both.
	ra, err := join(a, ja.MemberID)
	if err != nil || ra.ErrorCode != 0 {
		t.Fatalf("first member's rejoin: %v %+v", err, ra)
	}
	j := <-waiting
	if j.err != nil || j.resp.ErrorCode != 0 || j.resp.Generation != ra.Generation {
		t.Fatalf("waiting join: %v %+v, want generation %d", j.err, j.resp, ra.Generation)
	}
}

// TestCommitTimesOutWithPausedFollower pauses (SIGSTOP) a follower of the
// group's __consumer_offsets partition: it stays in the ISR until its
// ZooKeeper session expires, so nothing appended is committed meanwhile.
// offsets.commit.timeout.ms bounds the wait, as in Kafka: a commit gets
// REQUEST_TIMED_OUT and a SyncGroup REBALANCE_IN_PROGRESS, well before
// the ISR shrinks.
func TestCommitTimesOutWithPausedFollower(t *testing.T) {
	c, adm, ctx := startGroupsCluster(t, map[string]string{"offsets.commit.timeout.ms": "1000"})
	controller := c.controller()
	group, coordinator := groupCoordinated(t, ctx, adm, "stalled", func(int32) bool { return true })
	simple, _ := groupCoordinated(t, ctx, adm, "stalled-simple", func(id int32) bool { return id == coordinator })
	// The follower to pause: not the controller if that can be helped.
	var follower int32 = -1
	for _, id := range c.others(coordinator) {
		if follower < 0 || id != controller {
			follower = id
		}
	}

	c.createTopic("stalled-topic", 1, nil)
	br := c.brokerClient(coordinator)
	j, err := rawJoin(ctx, br, group, "")
	if err != nil || j.ErrorCode != 0 {
		t.Fatalf("join: %v %+v", err, j)
	}
	c.pause(follower)
	t.Logf("group %s on broker %d; follower %d paused", group, coordinator, follower)

	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = group, j.MemberID, j.Generation
	resp, err := br.Request(ctx, sync)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if code := resp.(*kmsg.SyncGroupResponse).ErrorCode; code != kerr.RebalanceInProgress.Code {
		t.Fatalf("sync while the follower is paused: %v, want REBALANCE_IN_PROGRESS", kerr.ErrorForCode(code))
	}

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = simple, -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "stalled-topic"
	cp := kmsg.NewOffsetCommitRequestTopicPartition()
	cp.Offset = 1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cresp, err := br.Request(ctx, commit)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if code := cresp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.RequestTimedOut.Code {
		t.Fatalf("commit while the follower is paused: %v, want REQUEST_TIMED_OUT", kerr.ErrorForCode(code))
	}
}

// groupsPartitions is offsets.topic.num.partitions in the group tests:
// enough for every broker to lead one.
const groupsPartitions = 3

// startGroupsCluster starts three brokers with a small __consumer_offsets,
// creates it and waits until its partitions have all replicas in sync.
func startGroupsCluster(t *testing.T, overrides map[string]string) (*cluster, *kadm.Client, context.Context) {
	t.Helper()
	cfg := map[string]string{
		"offsets.topic.num.partitions":     strconv.Itoa(groupsPartitions),
		"group.initial.rebalance.delay.ms": "0",
	}
	maps.Copy(cfg, overrides)
	c := startCluster(t, 3, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	adm := kadm.NewClient(testutil.Client(t, c.bootstrap()))
	testutil.Eventually(t, convergeTimeout, func() error { return adm.FindGroupCoordinators(ctx, "probe").Error() })
	c.converge(c.ids, healthy(offsetsTopic, groupsPartitions, c.ids))
	return c, adm, ctx
}

// groupCoordinated returns a group name with the prefix whose coordinator
// satisfies want, and that coordinator.
func groupCoordinated(t *testing.T, ctx context.Context, adm *kadm.Client, prefix string, want func(int32) bool) (string, int32) {
	t.Helper()
	var group string
	var coordinator int32
	testutil.Eventually(t, convergeTimeout, func() error {
		for i := range 30 {
			name := fmt.Sprintf("%s-%d", prefix, i)
			r := adm.FindGroupCoordinators(ctx, name)
			if err := r.Error(); err != nil {
				return err
			}
			if id := r[name].NodeID; want(id) {
				group, coordinator = name, id
				return nil
			}
		}
		return fmt.Errorf("no group %s-* has a coordinator as wanted", prefix)
	})
	return group, coordinator
}

// brokerClient is a new client's handle on broker id: requests go to it
// on the client's own connection, without retries.
func (c *cluster) brokerClient(id int32) *kgo.Broker {
	return testutil.Client(c.t, c.bootstrap()).Broker(int(id))
}

// rawJoin sends JoinGroup to br, with KIP-394's second round trip when
// the broker asks for it; sessions and rebalances last two minutes.
func rawJoin(ctx context.Context, br *kgo.Broker, group, memberID string) (*kmsg.JoinGroupResponse, error) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = group, memberID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 120_000, 120_000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	req.Protocols = append(req.Protocols, p)
	resp, err := br.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.JoinGroupResponse)
	if r.ErrorCode == kerr.MemberIDRequired.Code {
		req.MemberID = r.MemberID
		if resp, err = br.Request(ctx, req); err != nil {
			return nil, err
		}
		r = resp.(*kmsg.JoinGroupResponse)
	}
	return r, nil
}
