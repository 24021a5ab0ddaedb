package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller/store"
)

// ReassignPartitionsPath is Kafka's ReassignPartitionsZNode: reassignments
// requested by writing ZooKeeper directly (pre-2.4 tools and scripts).
const ReassignPartitionsPath = "/admin/reassign_partitions"

// reassignJSON is /admin/reassign_partitions as Kafka writes it:
// {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}.
// Kafka's tools once added "log_dirs"; it is ignored here as in Kafka's controller.
type reassignJSON struct {
	Version    int                   `json:"version"`
	Partitions []reassignPartitionJS `json:"partitions"`
}

type reassignPartitionJS struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

func encodeReassignment(m map[TP][]int32) []byte {
	j := reassignJSON{Version: 1, Partitions: []reassignPartitionJS{}}
	for _, tp := range sortedTPKeys(m) {
		j.Partitions = append(j.Partitions, reassignPartitionJS{tp.Topic, tp.Partition, m[tp]})
	}
	return mustJSON(j)
}

func decodeReassignment(data []byte) (map[TP][]int32, error) {
	var j reassignJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadZnodeData, ReassignPartitionsPath, err)
	}
	out := map[TP][]int32{}
	for _, p := range j.Partitions {
		if p.Topic == "" || p.Partition < 0 || p.Replicas == nil {
			return nil, fmt.Errorf("%w: %s: bad entry %+v", ErrBadZnodeData, ReassignPartitionsPath, p)
		}
		out[TP{p.Topic, p.Partition}] = p.Replicas
	}
	return out, nil
}

// processZkReassignment reads /admin/reassign_partitions when it was
// created since we last looked, and runs its entries (Kafka's
// processZkPartitionReassignment). Kafka acts on the znode's creation
// only: its own removals of completed entries, and any other write to an
// existing znode, are not read again. It returns the partitions it ran.
func (c *Controller) processZkReassignment(ctx context.Context) (map[TP]bool, error) {
	var exists bool
	var stat store.Stat
	var err error
	if c.zkReassignArmed {
		exists, stat, err = c.st.Exists(ctx, ReassignPartitionsPath)
	} else {
		var ch <-chan store.Event
		exists, stat, ch, err = c.st.ExistsW(ctx, ReassignPartitionsPath)
		if err == nil {
			c.zkReassignArmed = true
			c.forward(ctx, ch, func(p *pendingEvents) { p.zkReassign = true })
		}
	}
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", ReassignPartitionsPath, err)
	}
	if !exists || stat.Czxid == c.zkReassignSeen {
		return nil, nil
	}
	c.zkReassignSeen = stat.Czxid
	data, _, err := c.st.Get(ctx, ReassignPartitionsPath)
	if errors.Is(err, store.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ReassignPartitionsPath, err)
	}
	targets, err := decodeReassignment(data)
	if err != nil {
		// Left for the operator to fix: re-reading it would only fail again.
		c.log.Error("ignoring unreadable partition reassignment", "err", err)
		return nil, nil
	}
	results, acts := c.state.OnZkReassignments(targets)
	for _, tp := range sortedTPKeys(results) {
		if r := results[tp]; r.Code != 0 {
			c.log.Warn("zookeeper partition reassignment failed", "partition", tp, "error", kerr.ErrorForCode(r.Code), "message", r.Message)
		}
	}
	c.log.Info("partition reassignment from zookeeper", "partitions", len(targets))
	if err := c.execute(ctx, acts); err != nil {
		return nil, err
	}
	ran := map[TP]bool{}
	for tp := range targets {
		ran[tp] = true
	}
	return ran, nil
}

// initializeReassignments is Kafka's initializePartitionReassignments at
// controller start: a znode written while no controller watched runs
// first, then the reassignments recorded only in topic znodes (started by
// the API) resume.
func (c *Controller) initializeReassignments(ctx context.Context) error {
	c.zkReassignArmed, c.zkReassignSeen = false, 0
	ran, err := c.processZkReassignment(ctx)
	if err != nil {
		return err
	}
	return c.execute(ctx, c.state.ResumeReassignments(func(tp TP, _ ReplicaAssignment) bool { return !ran[tp] }))
}

// removeFromZkReassignment drops entries from /admin/reassign_partitions,
// deleting it when none is left (Kafka's maybeRemoveFromZkReassignment),
// fenced by the controller epoch.
func (c *Controller) removeFromZkReassignment(ctx context.Context, done []ReassignmentDone) error {
	ops, err := zkReassignmentRemoval(ctx, c.st, c.epochZkVersion, done)
	if err != nil || ops == nil {
		return err
	}
	if err := c.st.Multi(ctx, ops...); err != nil {
		return c.fenceErr(ctx, err, "update "+ReassignPartitionsPath)
	}
	return nil
}

// zkReassignmentRemoval builds removeFromZkReassignment's transaction: the
// check of the controller epoch's znode version, then the rewrite of
// /admin/reassign_partitions without the done entries, or its deletion
// when none is left; nil when there is nothing to remove.
func zkReassignmentRemoval(ctx context.Context, st Store, epochZkVersion int32, done []ReassignmentDone) ([]store.Op, error) {
	if len(done) == 0 {
		return nil, nil
	}
	data, stat, err := st.Get(ctx, ReassignPartitionsPath)
	if errors.Is(err, store.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ReassignPartitionsPath, err)
	}
	targets, err := decodeReassignment(data)
	if err != nil {
		return nil, nil // logged when it was read; nothing of ours to remove
	}
	removed := false
	for _, d := range done {
		if r, ok := targets[d.TP]; ok && (d.Replicas == nil || slices.Equal(r, d.Replicas)) {
			delete(targets, d.TP)
			removed = true
		}
	}
	if !removed {
		return nil, nil
	}
	var op store.Op = store.SetOp{Path: ReassignPartitionsPath, Data: encodeReassignment(targets), Version: stat.Version}
	if len(targets) == 0 {
		op = store.DeleteOp{Path: ReassignPartitionsPath, Version: stat.Version}
	}
	return []store.Op{store.CheckOp{Path: ControllerEpochPath, Version: epochZkVersion}, op}, nil
}

// AlterPartitionReassignments serves the API of that name (KIP-455) on the
// active controller; elsewhere it answers NOT_CONTROLLER.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, error) {
	var resp *kmsg.AlterPartitionAssignmentsResponse
	err := c.call(ctx, func(loopCtx context.Context, active bool) { resp = c.serveAlterReassignments(loopCtx, active, req) })
	if err != nil {
		return nil, err // f may still run later and write resp: never read it
	}
	return resp, nil
}

func (c *Controller) serveAlterReassignments(ctx context.Context, active bool, req *kmsg.AlterPartitionAssignmentsRequest) *kmsg.AlterPartitionAssignmentsResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	var reqs []ReassignmentRequest
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			reqs = append(reqs, ReassignmentRequest{TP{rt.Topic, rp.Partition}, rp.Replicas})
		}
	}
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRF
	if !active {
		resp.ErrorCode, resp.ErrorMessage = kerr.NotController.Code, &kerr.NotController.Message
		return resp
	}
	results, acts := c.state.OnAlterReassignments(reqs, allowRF)
	if err := c.execute(ctx, acts); err != nil {
		c.failed(err)
		resp.ErrorCode, resp.ErrorMessage = kerr.NotController.Code, &kerr.NotController.Message
		return resp
	}
	for _, rt := range req.Topics {
		ot := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		ot.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			op := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			op.Partition = rp.Partition
			if r := results[TP{rt.Topic, rp.Partition}]; r.Code != 0 {
				msg := r.Message
				op.ErrorCode, op.ErrorMessage = r.Code, &msg
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp
}

// ListPartitionReassignments serves the API of that name on the active controller.
func (c *Controller) ListPartitionReassignments(ctx context.Context, req *kmsg.ListPartitionReassignmentsRequest) (*kmsg.ListPartitionReassignmentsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	tps := requestedTPs(req.Topics, func(rt kmsg.ListPartitionReassignmentsRequestTopic) (string, []int32) { return rt.Topic, rt.Partitions })
	err := c.call(ctx, func(_ context.Context, active bool) {
		if !active {
			resp.ErrorCode, resp.ErrorMessage = kerr.NotController.Code, &kerr.NotController.Message
			return
		}
		found := c.state.ListReassignments(tps)
		for _, tp := range sortedTPKeys(found) {
			ra := found[tp]
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != tp.Topic {
				rt := kmsg.NewListPartitionReassignmentsResponseTopic()
				rt.Topic = tp.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			p := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			p.Partition = tp.Partition
			p.Replicas, p.AddingReplicas, p.RemovingReplicas = slices.Clone(ra.Replicas), nonNil(ra.Adding), nonNil(ra.Removing)
			rt := &resp.Topics[len(resp.Topics)-1]
			rt.Partitions = append(rt.Partitions, p)
		}
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return slices.Clone(ids)
}
