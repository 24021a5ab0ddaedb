package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/brook-mq/brook/controller/store"
)

type stopReplicaResult struct {
	topic  string
	broker int32
	ok     bool
}

// deletion tracks one topic deletion until every replica confirmed.
type deletion struct {
	waiting  map[int32]bool // brokers whose StopReplica has not succeeded yet
	eligible bool           // all replicas were live when StopReplica was sent
}

// processDeletions reads the deletion markers (arming the watch) and starts
// or retries each deletion.
func (c *Controller) processDeletions(ctx context.Context) error {
	var names []string
	var err error
	if c.deletionsArmed {
		names, _, err = c.st.Children(ctx, DeleteTopicsPath)
	} else {
		var ch <-chan store.Event
		names, _, ch, err = c.st.ChildrenW(ctx, DeleteTopicsPath)
		if err == nil {
			c.deletionsArmed = true
			c.forward(ctx, ch, func(p *pendingEvents) { p.deletions = true })
		}
	}
	if err != nil {
		return fmt.Errorf("list topic deletions: %w", err)
	}
	for _, name := range names {
		if !c.cfg.DeleteTopicEnable || c.state.Topics[name] == nil {
			// Kafka removes markers it will not act on.
			if err := c.deleteFenced(ctx, DeleteTopicPath(name)); err != nil {
				return err
			}
			continue
		}
		if d := c.deletions[name]; d != nil && d.eligible && len(d.waiting) > 0 {
			continue // in progress
		}
		if c.state.TopicReassigning(name) {
			continue // Kafka: ineligible while a reassignment is in progress
		}
		acts, allLive := c.state.OnTopicDeletion(name)
		d := &deletion{waiting: map[int32]bool{}, eligible: allLive}
		for id := range acts.StopReplica {
			d.waiting[id] = true
		}
		c.deletions[name] = d
		if err := c.execute(ctx, acts); err != nil {
			return err
		}
		if err := c.maybeFinishDeletion(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func (c *Controller) onStopReplicaResults(ctx context.Context, rs []stopReplicaResult) error {
	for _, r := range rs {
		d := c.deletions[r.topic]
		if d == nil {
			continue
		}
		if !r.ok {
			d.eligible = false // retried when brokers change
			continue
		}
		delete(d.waiting, r.broker)
		if err := c.maybeFinishDeletion(ctx, r.topic); err != nil {
			return err
		}
	}
	return nil
}

// maybeFinishDeletion removes the topic's znodes once every replica has
// deleted its partitions, then tells brokers nothing more (they dropped the
// partitions on UpdateMetadata with leader -2 and StopReplica).
func (c *Controller) maybeFinishDeletion(ctx context.Context, name string) error {
	d := c.deletions[name]
	if d == nil || !d.eligible || len(d.waiting) > 0 {
		return nil
	}
	ops := []store.Op{store.CheckOp{Path: ControllerEpochPath, Version: c.epochZkVersion}}
	parts, _, err := c.st.Children(ctx, PartitionsPath(name))
	if err != nil && !errors.Is(err, store.ErrNoNode) {
		return fmt.Errorf("list partitions of %s: %w", name, err)
	}
	for _, p := range parts {
		pp := PartitionsPath(name) + "/" + p
		if ok, _, _ := c.st.Exists(ctx, pp+"/state"); ok {
			ops = append(ops, store.DeleteOp{Path: pp + "/state", Version: store.AnyVersion})
		}
		ops = append(ops, store.DeleteOp{Path: pp, Version: store.AnyVersion})
	}
	if err == nil {
		ops = append(ops, store.DeleteOp{Path: PartitionsPath(name), Version: store.AnyVersion})
	}
	ops = append(ops, store.DeleteOp{Path: TopicPath(name), Version: store.AnyVersion})
	if ok, _, _ := c.st.Exists(ctx, TopicConfigPath(name)); ok {
		ops = append(ops, store.DeleteOp{Path: TopicConfigPath(name), Version: store.AnyVersion})
	}
	ops = append(ops, store.DeleteOp{Path: DeleteTopicPath(name), Version: store.AnyVersion})
	if err := c.st.Multi(ctx, ops...); err != nil {
		if errors.Is(err, store.ErrBadVersion) {
			return fmt.Errorf("%w: fenced while deleting %s", errLostControl, name)
		}
		return fmt.Errorf("delete topic %s znodes: %w", name, err)
	}
	c.state.OnTopicDeleted(name)
	delete(c.deletions, name)
	c.log.Info("deleted topic", "topic", name)
	return nil
}
