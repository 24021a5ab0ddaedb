package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/brook-mq/brook/controller/store"
)

// ISR change notifications, as Kafka's ZooKeeper mode has them: a broker
// at inter.broker.protocol.version below 2.7 (no AlterPartition) shrinks
// and expands ISRs by writing the partition state znode itself, with a
// conditional set on its version, and then tells the controller with a
// sequential /isr_change_notification/isr_change_<seq> node
// {"version":1,"partitions":[{"topic":"t","partition":0}]}. Kafka 3.9
// still does so at such an IBP. The controller re-reads those partitions'
// states, sends UpdateMetadata for them to every live broker, checks
// whether the change completes a reassignment, and deletes the
// notifications (Kafka's processIsrChangeNotification). At IBP 2.7+ the
// ISR goes through AlterPartition and nothing is written here.

// IsrChangePrefix names the sequential children of IsrChangePath.
const IsrChangePrefix = "isr_change_"

// OnPartitionStatesRead takes partition states that someone else wrote
// (a broker below IBP 2.7 changing its ISR) into the state, tells every
// live broker, and completes reassignments the new ISRs allow. A
// partition unknown, not started or being deleted is skipped, as is a
// state not newer than the one held (by znode version).
func (s *ClusterState) OnPartitionStatesRead(states map[TP]PartitionState) Actions {
	a := newActions()
	tps := make([]TP, 0, len(states))
	for tp := range states {
		tps = append(tps, tp)
	}
	sortTPs(tps)
	var changed []TP
	for _, tp := range tps {
		t := s.Topics[tp.Topic]
		if t == nil || s.Deleting[tp.Topic] {
			continue
		}
		cur, ok := t.States[tp.Partition]
		if !ok || states[tp].ZkVersion <= cur.ZkVersion {
			continue
		}
		t.States[tp.Partition] = states[tp]
		changed = append(changed, tp)
	}
	if len(changed) == 0 {
		return a
	}
	a.updateAll(s, changed...)
	for _, tp := range changed {
		s.maybeCompleteReassignment(&a, tp)
	}
	return a
}

// processIsrChanges handles the notifications present: it re-reads the
// partitions they name, acts on the new states and deletes them, fenced
// by the controller epoch.
func (c *Controller) processIsrChanges(ctx context.Context) error {
	names, err := c.watchNotifications(ctx, IsrChangePath, IsrChangePrefix, func(p *pendingEvents) { p.isrChanges = true })
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	var tps []TP
	for _, n := range names {
		path := IsrChangePath + "/" + n
		data, _, err := c.st.Get(ctx, path)
		if errors.Is(err, store.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		got, derr := decodePartitionList(data)
		if derr != nil {
			c.log.Warn("ignoring unreadable isr change notification", "node", path, "err", derr)
		}
		tps = append(tps, got...)
	}
	states := map[TP]PartitionState{}
	for _, tp := range tps {
		if _, ok := states[tp]; ok {
			continue
		}
		data, stat, err := c.st.Get(ctx, PartitionStatePath(tp.Topic, tp.Partition))
		if errors.Is(err, store.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read state of %s: %w", tp, err)
		}
		ps, err := decodePartitionState(data, stat)
		if err != nil {
			c.log.Warn("ignoring unreadable partition state named by an isr change", "partition", tp.String(), "err", err)
			continue
		}
		states[tp] = ps
	}
	if err := c.execute(ctx, c.state.OnPartitionStatesRead(states)); err != nil {
		return err
	}
	for _, n := range names {
		if err := c.deleteFenced(ctx, IsrChangePath+"/"+n); err != nil {
			return err
		}
	}
	return nil
}
