package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/internal/workload"
)

// TestMixedMembership: ZooKeeper, two Kafka 3.9 brokers (1, 2) and one
// Brook (3). An RF=3 topic has partitions whose preferred leader is each
// broker, so Kafka follows Brook and Brook follows Kafka, and every replica
// must be in every ISR. An idempotent acks=all producer, a reader and two
// consumer groups, one coordinated by a Kafka-led and one by a Brook-led
// __consumer_offsets partition, run throughout while the controller
// (Kafka 1) is killed with kill -9 and restarted, then Brook, then (with
// $INTEROP_FULL, make interop) Kafka 2. The checkers of tests/cluster's
// chaos tests decide: no acknowledged record lost, no duplicate, no
// committed offset going back or lost.
//
// Transactional producers run throughout as well (mixed_txn_test.go):
// one coordinated by Kafka 1 and one by Brook 3, each transaction over
// partitions led by both kinds. Killing Kafka 1 moves the first
// coordinator to Brook, killing Brook moves the second to Kafka, and a
// preferred-leader election after each restart moves them back; the
// final read_committed log must hold every committed transaction whole
// and nothing of an aborted one.
func TestMixedMembership(t *testing.T) {
	const (
		topic             = "mixed"
		offsetsPartitions = 6
	)
	// Each broker is the preferred leader of two partitions, and each
	// follows the other two kinds' leaders.
	assignment := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}, {1, 3, 2}, {2, 1, 3}, {3, 2, 1}}
	partitions := int32(len(assignment))

	c := startMixedCluster(t, []bool{true, true, false}, offsetsPartitions)
	if ctrl := c.controller(); ctrl != 1 {
		t.Fatalf("controller is broker %d, want Kafka 1 (started first)", ctrl)
	}
	c.createTopic(topic, assignment)
	view := c.waitInSync(topic, len(assignment))
	for p, replicas := range assignment {
		if got := view[int32(p)].leader; got != replicas[0] {
			t.Fatalf("%s-%d: leader %d, want %d (the preferred leader)", topic, p, got, replicas[0])
		}
	}

	// The first FindCoordinator creates __consumer_offsets; then one group
	// is coordinated by a Kafka-led partition and one by a Brook-led one.
	testutil.Eventually(t, mixedConverge, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resps := c.adm.FindGroupCoordinators(ctx, "probe")
		return resps.Error()
	})
	offsets := c.waitInSync(offsetsTopic, offsetsPartitions)
	groups := map[bool]string{} // kafka-led -> group id
	for p, pv := range offsets {
		kafkaLed := c.node(pv.leader).kafka
		if _, ok := groups[kafkaLed]; !ok {
			groups[kafkaLed] = groupOn(fmt.Sprintf("led-by-%d", pv.leader), p, offsetsPartitions)
		}
	}
	if len(groups) != 2 {
		t.Fatalf("__consumer_offsets leaders %v: want partitions led by Kafka and by Brook", offsets)
	}
	for kafkaLed, g := range groups {
		coord := c.coordinator(g)
		if c.node(coord).kafka != kafkaLed {
			t.Fatalf("group %s: coordinator %v, want Kafka %v", g, c.node(coord), kafkaLed)
		}
		t.Logf("group %s: coordinator %v", g, c.node(coord))
	}

	// Transactions across kinds: a coordinator on Kafka 1 (Brook next in
	// its partition's replicas) and one on Brook 3 (Kafka 1 next), each
	// writing over partitions led by Kafka and by Brook.
	txnAssignment := [][]int32{{1, 3, 2}, {3, 1, 2}, {2, 3, 1}}
	txns := startMixedTxns(c, txnAssignment, offsetsPartitions, 1, 3)
	// Where the two coordinators are while a broker is down: a kill moves
	// each coordinator it held to the next replica, of the other kind.
	coordsWithout := map[int32][2]int32{1: {3, 3}, 2: {1, 3}, 3: {1, 1}}

	w := workload.StartWriter(t, c.bootstrap(), topic, partitions)
	r := workload.StartReader(t, c.bootstrap(), topic, partitions)
	members := map[string]*workload.Members{}
	for _, g := range groups {
		members[g] = workload.StartMembers(t, c.bootstrap(), g, topic, 2)
	}
	w.WaitAcked(t, 100, mixedConverge)

	crash := []int32{1, 3}
	if os.Getenv("INTEROP_FULL") != "" {
		crash = append(crash, 2)
	}
	for _, id := range crash {
		n := c.node(id)
		ctrl := c.controller()
		c.kill9(id)
		t.Logf("kill -9 %v (controller was %d)", n, ctrl)
		killed := time.Now()
		// The survivors carry on: acks=all needs two of three replicas.
		w.WaitAcked(t, w.Acked()+50, mixedConverge)
		want := coordsWithout[id]
		txns.waitCoordinators(want[0], want[1])
		txns.waitCommitSince(killed)
		c.restartAfterCrash(n)
		c.waitInSync(topic, len(assignment))
		c.waitInSync(offsetsTopic, offsetsPartitions)
		c.waitInSync(txnStateTopic, offsetsPartitions)
		c.waitInSync(mixedTxnTopic, len(txnAssignment))
		// A preferred-leader election moves the coordinators back, to
		// the other kind, while the producers run.
		back := time.Now()
		txns.electPreferred()
		txns.waitCoordinators(1, 3)
		txns.waitCommitSince(back)
		t.Logf("%v back, every replica in sync, coordinators moved back; controller %v", n, c.node(c.controller()))
	}

	// Every broker back: the writer and each group must make progress
	// again before they stop and the final state is read.
	recovered := time.Now()
	w.WaitAcked(t, w.Acked()+50, mixedConverge)
	for g, m := range members {
		waitCommitSince(t, g, m, recovered)
	}
	txns.verify(int32(len(txnAssignment)))
	rep := c.verifyRun(topic, partitions, w, r, members)
	t.Logf("mixed cluster checked: %d produced, %d acknowledged, %d failed, %d skipped, %d in the final log, %d read during the run; producer errors (retried) %v",
		rep.Produced, rep.Acked, rep.Failed, rep.Skipped, rep.Final, rep.ReadDuringRun, w.Errors())
}

// verifyRun stops the writer, the reader and the groups' members and
// decides the run with internal/workload's checkers: no acknowledged
// record lost, no duplicate or reordering, no committed offset going back
// or lost, and something acknowledged at all.
func (c *mixedCluster) verifyRun(topic string, partitions int32, w *workload.Writer, r *workload.Reader, members map[string]*workload.Members) workload.Report {
	t := c.t
	t.Helper()
	w.Finish(t, mixedConverge)
	r.Stop()
	final := workload.ReadFinal(t, c.bootstrap(), topic, partitions, mixedConverge)
	rep, violations := workload.Verify(topic, partitions, final, w, r)
	workload.ReportViolations(t, violations)
	if rep.Acked == 0 {
		t.Error("nothing was acknowledged: the test checked nothing")
	}
	for g, m := range members {
		m.Stop()
		committed := c.committed(g, topic)
		workload.ReportViolations(t, workload.VerifyCommits(topic, m.Log.Snapshot(), committed))
		acked, fetched, _, errs := m.Log.Counts()
		if acked == 0 {
			t.Errorf("group %s: no commit acknowledged", g)
		}
		t.Logf("group %s: %d acknowledged commits, %d OffsetFetch sightings, final %v; errors (retried) %v", g, acked, fetched, committed, errs)
	}
	return rep
}

// waitCommitSince waits until group m has a commit acknowledged after
// since: the group makes progress again once every broker is back.
func waitCommitSince(t *testing.T, group string, m *workload.Members, since time.Time) {
	t.Helper()
	testutil.Eventually(t, mixedConverge, func() error {
		if _, _, last, errs := m.Log.Counts(); !last.After(since) {
			return fmt.Errorf("group %s: no commit acknowledged since %v; errors %v", group, since.Format(time.TimeOnly), errs)
		}
		return nil
	})
}

// coordinator is the id of group's coordinator.
func (c *mixedCluster) coordinator(group string) int32 {
	c.t.Helper()
	var id int32
	testutil.Eventually(c.t, mixedConverge, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, ok := c.adm.FindGroupCoordinators(ctx, group)[group]
		if !ok {
			return errors.New("no answer")
		}
		if resp.Err != nil {
			return resp.Err
		}
		id = resp.NodeID
		return nil
	})
	return id
}

// committed reads group's committed offsets of topic.
func (c *mixedCluster) committed(group, topic string) map[int32]int64 {
	c.t.Helper()
	out := map[int32]int64{}
	testutil.Eventually(c.t, mixedConverge, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resps, err := c.adm.FetchOffsets(ctx, group)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			return err
		}
		resps.Offsets().Each(func(o kadm.Offset) {
			if o.Topic == topic {
				out[o.Partition] = o.At
			}
		})
		return nil
	})
	return out
}
