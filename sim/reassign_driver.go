package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/controller/store"
)

// The controller driver's side of partition reassignments, after
// controller/reassign_driver.go and execute.go: the decisions are the
// real ClusterState's (OnAlterReassignments, OnZkReassignments,
// ResumeReassignments, and the completion inside OnAlterPartition and
// OnBrokersChange); the driver reads /admin/reassign_partitions on its
// creation (Kafka's controller acts on the creation only), resumes the
// reassignments recorded in the topic znode at election, sends the
// removed replicas StopReplica (delete) through the broker channels, and
// drops completed entries from /admin/reassign_partitions with the real
// controller.ZkReassignmentRemoval.

// zkReassign is the driver's watch state of /admin/reassign_partitions:
// armed, a watch is outstanding; seen, the czxid of the znode last read.
type zkReassign struct {
	armed bool
	seen  int64
}

// initializeReassignments is controller.initializeReassignments, run at
// election after OnElected: the znode first, then the reassignments
// recorded only in topic znodes resume.
func (d *ctrlDriver) initializeReassignments() error {
	d.zkReassign = zkReassign{}
	ran, err := d.processZkReassignment()
	if err != nil {
		return err
	}
	return d.execute(d.state.ResumeReassignments(func(tp controller.TP, _ controller.ReplicaAssignment) bool { return !ran[tp] }))
}

// processZkReassignment is controller.processZkReassignment.
func (d *ctrlDriver) processZkReassignment() (map[controller.TP]bool, error) {
	ctx := context.Background()
	var exists bool
	var stat store.Stat
	var err error
	if d.zkReassign.armed {
		exists, stat, err = d.sess().Exists(ctx, controller.ReassignPartitionsPath)
	} else {
		var ch <-chan store.Event
		exists, stat, ch, err = d.sess().ExistsW(ctx, controller.ReassignPartitionsPath)
		if err == nil {
			d.zkReassign.armed = true
			d.onWatch("reassign_partitions", ch, func() error {
				d.zkReassign.armed = false
				_, err := d.processZkReassignment()
				return err
			})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", controller.ReassignPartitionsPath, err)
	}
	if !exists || stat.Czxid == d.zkReassign.seen {
		return nil, nil
	}
	data, _, err := d.sess().Get(ctx, controller.ReassignPartitionsPath)
	if errors.Is(err, store.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", controller.ReassignPartitionsPath, err)
	}
	d.zkReassign.seen = stat.Czxid
	targets, err := controller.DecodeZkReassignment(data)
	if err != nil {
		d.b.c.fail("controller %d: %s unreadable: %v", d.b.id, controller.ReassignPartitionsPath, err)
		return nil, nil
	}
	results, acts := d.state.OnZkReassignments(targets)
	for _, tp := range sortedTPs(results) {
		if r := results[tp]; r.Code != 0 {
			d.b.c.sched.Tracef("controller %d: zookeeper reassignment of %s failed: %s", d.b.id, tp, kerr.ErrorForCode(r.Code))
		}
	}
	d.b.c.sched.Tracef("controller %d runs %d reassignments from zookeeper", d.b.id, len(targets))
	if err := d.execute(acts); err != nil {
		return nil, err
	}
	ran := map[controller.TP]bool{}
	for tp := range targets {
		ran[tp] = true
	}
	return ran, nil
}

// alterReassignments serves AlterPartitionReassignments as
// controller.AlterPartitionReassignments does on the active controller
// (v0: the replication factor may change). ok is false when no answer
// goes back: the loop is blocked on a lost connection, and the decision,
// taken, is written once it is back.
func (d *ctrlDriver) alterReassignments(reqs []controller.ReassignmentRequest) (results map[controller.TP]controller.ApiError, code int16, ok bool) {
	if !d.active {
		return nil, kerr.NotController.Code, true
	}
	if d.busy {
		return nil, 0, false
	}
	results, acts := d.state.OnAlterReassignments(reqs, true)
	switch err := d.execute(acts); {
	case errors.Is(err, errBlocked):
		return nil, 0, false
	case err != nil:
		d.resign(fmt.Sprintf("AlterPartitionReassignments: %v", err))
		return nil, kerr.NotController.Code, true
	}
	return results, 0, true
}

// removeZkReassignments drops completed entries from
// /admin/reassign_partitions, fenced by the controller epoch (execute's
// last step in the controller; here right after the state writes, so
// that a retry after a lost connection, which comes before any request
// is queued, repeats nothing: an event sees one connection state).
func (d *ctrlDriver) removeZkReassignments(done []controller.ReassignmentDone) error {
	ctx := context.Background()
	ops, err := controller.ZkReassignmentRemoval(ctx, d.sess(), d.epochVersion, done)
	if err != nil || ops == nil {
		return err
	}
	if err := d.sess().Multi(ctx, ops...); err != nil {
		return fmt.Errorf("update %s: %w", controller.ReassignPartitionsPath, err)
	}
	return nil
}

// sendRemoveReplicas sends the replicas a reassignment removed
// StopReplica with delete at the current leader epoch
// (controller.BuildRemoveReplicas), in broker id order; the answer is
// not waited for, as in the controller.
func (d *ctrlDriver) sendRemoveReplicas(removes map[int32][]controller.TP) {
	for _, id := range sortedKeys(removes) {
		if ch := d.channels[id]; ch != nil {
			ch.enqueue(controller.BuildRemoveReplicas(d.state, id, removes[id]), nil)
		}
	}
}

func sortedTPs[V any](m map[controller.TP]V) []controller.TP {
	out := make([]controller.TP, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	slices.SortFunc(out, func(a, b controller.TP) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out
}
