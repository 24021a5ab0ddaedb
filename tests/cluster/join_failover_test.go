package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
)

// TestJoinGroupSurvivesFollowerKill9 kills, during a rebalance, a broker
// that follows the group's __consumer_offsets partition (and is not the
// controller). The controller shrinks the ISR and sends the coordinator a
// LeaderAndISR in which it stays the leader: as in Kafka, whose
// coordinator loads a partition only when it becomes its leader, the
// group must carry on untouched, so the rebalance completes with the same
// members, one generation on.
func TestJoinGroupSurvivesFollowerKill9(t *testing.T) {
	testJoinSurvives(t, false)
}

// TestJoinGroupSurvivesControllerKill9 is the same with the controller
// killed (it is not the group's coordinator): the new controller sends
// every broker LeaderAndISR for every partition, the coordinator's among
// them, and the group must not notice.
func TestJoinGroupSurvivesControllerKill9(t *testing.T) {
	testJoinSurvives(t, true)
}

// joinResult is a JoinGroup's outcome, from the goroutine that waited for it.
type joinResult struct {
	resp *kmsg.JoinGroupResponse
	err  error
}

func testJoinSurvives(t *testing.T, killController bool) {
	const offsetsPartitions = 3
	c := startCluster(t, 3, groupsConfig(offsetsPartitions, nil))
	adm := kadm.NewClient(testutil.Client(t, c.bootstrap(), clientLog()...))
	var candidates []string
	for i := range 12 {
		candidates = append(candidates, fmt.Sprintf("join-%d", i))
	}
	c.offsetsReady(adm, offsetsPartitions, candidates...)
	coords := c.groupCoordinators(adm, candidates...)
	ctrl := c.controller()
	var group string
	for _, g := range candidates {
		if coords[g] != ctrl {
			group = g
			break
		}
	}
	if group == "" {
		t.Fatalf("the controller %d coordinates every one of %v", ctrl, candidates)
	}
	coord := coords[group]
	// RF 3 on 3 brokers: every broker but the coordinator follows its
	// partition, the controller included.
	victim := ctrl
	if !killController {
		victim = c.others(coord, ctrl)[0]
	}
	t.Logf("group %s: coordinator %d, controller %d; will kill broker %d", group, coord, ctrl, victim)

	// Generation 1: member a alone, synced, Stable.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a := newGroupMember(c, group, coord)
	var first *kmsg.JoinGroupResponse
	testutil.Eventually(t, convergeTimeout, func() error {
		var err error
		first, err = a.join(ctx) // COORDINATOR_LOAD_IN_PROGRESS until loaded
		return err
	})
	gen := first.Generation
	if err := a.sync(ctx, gen, []string{a.memberID}); err != nil {
		t.Fatal(err)
	}

	// Member b joins: the group prepares a rebalance and b's JoinGroup is
	// parked until a joins again (or the rebalance timeout, minutes away).
	b := newGroupMember(c, group, coord)
	bDone := make(chan joinResult, 1)
	go func() {
		r, err := b.join(ctx)
		bDone <- joinResult{r, err}
	}()
	admin := newKgoBroker(t, c.broker(coord).Addr())
	var members []string
	testutil.Eventually(t, convergeTimeout, func() error {
		state, m, err := describeGroup(ctx, admin, group)
		if err != nil {
			return err
		}
		if state != "PreparingRebalance" || len(m) != 2 {
			return fmt.Errorf("group %s: state %s, members %v; want PreparingRebalance with a and b", group, state, m)
		}
		members = m
		return nil
	})
	bID := members[0]
	if bID == a.memberID {
		bID = members[1]
	}

	c.kill9(victim)
	live := c.others(victim)
	// The survivors agree that the victim is gone from every ISR of
	// __consumer_offsets (and, for the controller, that another one took
	// over): the coordinator has had its LeaderAndISR.
	c.converge(live, func(v clusterView) error {
		if err := v.checkTopicHealthy(offsetsTopic, offsetsPartitions, 3, live, false); err != nil {
			return err
		}
		for _, p := range v.topicPartitions(offsetsTopic) {
			if pv := v.Partitions[p]; slices.Contains(pv.ISR, victim) {
				return fmt.Errorf("%s: ISR %v still holds killed broker %d", p, pv.ISR, victim)
			}
		}
		return nil
	})
	select {
	case r := <-bDone:
		t.Fatalf("member b's JoinGroup ended before member a rejoined, after broker %d died: %v (response %+v)", victim, r.err, r.resp)
	default:
	}

	// a joins again: that completes the rebalance for both.
	rejoinCtx, rejoinCancel := context.WithTimeout(ctx, 2*convergeTimeout)
	defer rejoinCancel()
	ra, err := a.join(rejoinCtx)
	if err != nil {
		t.Fatalf("member a's JoinGroup after broker %d died: %v", victim, err)
	}
	var rb joinResult
	select {
	case rb = <-bDone:
	case <-rejoinCtx.Done():
		t.Fatalf("member b's JoinGroup not answered once a rejoined (a got generation %d, members %d)", ra.Generation, len(ra.Members))
	}
	if rb.err != nil {
		t.Fatalf("member b's JoinGroup, parked while broker %d died: %v", victim, rb.err)
	}
	for name, r := range map[string]*kmsg.JoinGroupResponse{"a": ra, "b": rb.resp} {
		if r.Generation != gen+1 {
			t.Errorf("member %s: generation %d after the rebalance, want %d (one more than before)", name, r.Generation, gen+1)
		}
	}
	if ra.MemberID != a.memberID || rb.resp.MemberID != bID {
		t.Errorf("member ids after the rebalance a=%q b=%q, want a=%q b=%q", ra.MemberID, rb.resp.MemberID, a.memberID, bID)
	}
	leader := ra
	if rb.resp.LeaderID == rb.resp.MemberID {
		leader = rb.resp
	}
	var joined []string
	for _, m := range leader.Members {
		joined = append(joined, m.MemberID)
	}
	slices.Sort(joined)
	if !slices.Equal(joined, members) {
		t.Errorf("the leader was given members %v, want %v", joined, members)
	}
	t.Logf("broker %d killed during the rebalance; generation %d -> %d with members %v", victim, gen, ra.Generation, joined)
}
