package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/internal/testutil"
	"github.com/brook-mq/brook/internal/workload"
)

// addBroker starts broker id (the next one) with the cluster's defaults
// plus overrides and waits until it is registered.
func (c *cluster) addBroker(id int32, overrides map[string]string) {
	c.t.Helper()
	c.ids = append(c.ids, id)
	c.brokers[id] = testutil.StartBrook(c.t, brookBin, c.brokerConfig(id, overrides))
	c.size = len(c.ids)
	c.waitRegistered(c.ids)
}

// reassigned is a converge check: each partition of want has exactly
// those replicas, in that order, all in the ISR.
func reassigned(want map[tp][]int32) func(clusterView) error {
	return func(v clusterView) error {
		for p, replicas := range want {
			got := v.Partitions[p]
			if !slices.Equal(got.Replicas, replicas) || !slices.Equal(got.ISR, sortedIDs(replicas)) || !slices.Contains(replicas, got.Leader) {
				return fmt.Errorf("%s: replicas %v isr %v leader %d, want replicas and isr %v", p, got.Replicas, got.ISR, got.Leader, replicas)
			}
		}
		return nil
	}
}

// waitNoReassignments waits until the controller lists none in progress.
// It asks for all of them (topics null) itself: kadm's
// ListPartitionReassignments answers an empty set without asking.
func waitNoReassignments(t *testing.T, cl *kgo.Client) {
	t.Helper()
	testutil.Eventually(t, convergeTimeout, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		resp, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			return err
		}
		if len(resp.Topics) > 0 {
			return fmt.Errorf("reassignments in progress: %+v", resp.Topics)
		}
		return nil
	})
}

// TestReassign grows a cluster from 3 brokers to 4 and moves half the
// partitions onto the new one with AlterPartitionReassignments, each
// losing its current leader's replica (so leadership moves too), while an
// idempotent acks=all producer writes and a reader reads: no acknowledged
// record may be lost, repeated or reordered, and the removed replicas'
// logs are deleted. Then, on the same cluster, Kafka's
// kafka-reassign-partitions runs a throttled move, --list, --verify,
// --cancel and --generate (reassignWithTool).
func TestReassign(t *testing.T) {
	// Small fetches and a short quota window keep a throttled move close
	// to its rate from the start (replica.Quota allows a burst of
	// window.num-1 windows).
	overrides := map[string]string{"replica.fetch.max.bytes": "65536", "replication.quota.window.num": "2"}
	c := startCluster(t, 3, overrides)
	const topic, partitions = "grow", 6
	c.createTopic(topic, partitions, nil)
	before := c.converge(c.ids, healthy(topic, partitions, c.ids))
	w := workload.StartWriter(t, c.bootstrap(), topic, partitions)
	r := workload.StartReader(t, c.bootstrap(), topic, partitions)

	// Records flow before, during and after the move.
	w.WaitAcked(t, 60, convergeTimeout)
	c.addBroker(4, overrides)
	cl := testutil.Client(t, c.bootstrap())
	adm := kadm.NewClient(cl)
	var req kadm.AlterPartitionAssignmentsReq
	want := map[tp][]int32{}
	removed := map[tp]int32{}
	for p := int32(0); p < partitions; p += 2 {
		pv := before.Partitions[tp{topic, p}]
		target := append([]int32{4}, slices.DeleteFunc(slices.Clone(pv.Replicas), func(id int32) bool { return id == pv.Leader })...)
		req.Assign(topic, p, target)
		want[tp{topic, p}] = target
		removed[tp{topic, p}] = pv.Leader
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("alter partition reassignments: %v", err)
	}
	waitNoReassignments(t, cl)
	c.converge(c.ids, reassigned(want))
	w.WaitAcked(t, w.Acked()+60, convergeTimeout)

	// The removed replicas' logs are gone from their brokers.
	testutil.Eventually(t, convergeTimeout, func() error {
		for p, id := range removed {
			dirs, err := adm.DescribeBrokerLogDirs(ctx, id, kadm.TopicsSet{topic: {p.partition: {}}})
			if err != nil {
				return err
			}
			var left bool
			dirs.EachPartition(func(d kadm.DescribedLogDirPartition) { left = left || d.Partition == p.partition })
			if left {
				return fmt.Errorf("%s still on removed broker %d", p, id)
			}
		}
		return nil
	})

	w.Finish(t, convergeTimeout)
	r.Stop()
	final := workload.ReadFinal(t, c.bootstrap(), topic, partitions, convergeTimeout)
	rep, violations := workload.Verify(topic, partitions, final, w, r)
	t.Logf("produced %d, acknowledged %d, failed %d, in the final log %d, read during the move %d", rep.Produced, rep.Acked, rep.Failed, rep.Final, rep.ReadDuringRun)
	workload.ReportViolations(t, violations)
	if rep.Acked == 0 {
		t.Fatal("no record was acknowledged")
	}
	if t.Failed() {
		return
	}
	reassignWithTool(t, c, topic, partitions)
}
