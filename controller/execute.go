package controller

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller/store"
)

// execute performs a decision: writes first, fenced by the controller
// epoch, then the requests, each broker's in Kafka's order (LeaderAndISR,
// UpdateMetadata, StopReplica; UpdateMetadata first to a broker in
// MetadataFirst).
func (c *Controller) execute(ctx context.Context, a Actions) error {
	if len(a.Writes) > 0 || len(a.Assignments) > 0 {
		if err := c.writeStates(ctx, a.Writes, a.Assignments); err != nil {
			return err
		}
	}
	ids := map[int32]bool{}
	for id := range a.LeaderAndISR {
		ids[id] = true
	}
	for id := range a.UpdateMetadata {
		ids[id] = true
	}
	for id := range a.StopReplica {
		ids[id] = true
	}
	for id := range a.RemoveReplicas {
		ids[id] = true
	}
	var um updateMetadataOnce
	for _, id := range sortedKeys(ids) {
		bc := c.channels[id]
		if bc == nil {
			continue // not live: it gets everything when it registers
		}
		ums, sendUM := a.UpdateMetadata[id]
		if sendUM && a.MetadataFirst[id] {
			bc.enqueue(um.build(c.state, id, ums), nil)
			sendUM = false
		}
		if tps, ok := a.LeaderAndISR[id]; ok {
			req := BuildLeaderAndISR(c.state, id, tps, c.cfg.InterBrokerListener)
			bc.enqueue(req, c.onLeaderAndISRAnswer(id, req))
		}
		if sendUM {
			bc.enqueue(um.build(c.state, id, ums), nil)
		}
		if tps, ok := a.StopReplica[id]; ok {
			c.sendStopReplica(bc, id, tps)
		}
		if tps, ok := a.RemoveReplicas[id]; ok {
			bc.enqueue(BuildRemoveReplicas(c.state, id, tps), nil)
		}
	}
	for _, d := range a.ZkReassignmentDone {
		if d.Replicas != nil {
			// A completed reassignment may unblock a deletion waiting for it.
			c.recheckDeletions = true
		}
	}
	return c.removeFromZkReassignment(ctx, a.ZkReassignmentDone)
}

// updateMetadataOnce builds a decision's UpdateMetadata requests. A
// decision usually sends every live broker the same partitions, and only
// the broker epoch differs between their requests: at a rejoin of 50,000
// partitions each broker's copy took tens of milliseconds to build. Each
// broker gets a copy of one template, which is never sent: a channel's
// goroutine sets the version of the request it sends (SetVersion) while
// the next copy is taken. The copies share their topic and broker lists,
// which no sender or receiver changes.
type updateMetadataOnce struct {
	tps  map[TP]bool
	tmpl *kmsg.UpdateMetadataRequest
}

func (u *updateMetadataOnce) build(s *ClusterState, broker int32, tps map[TP]bool) *kmsg.UpdateMetadataRequest {
	if u.tmpl == nil || !maps.Equal(u.tps, tps) {
		u.tps, u.tmpl = tps, BuildUpdateMetadata(s, broker, tps)
	}
	req := *u.tmpl
	req.BrokerEpoch = s.Live[broker].Epoch
	return &req
}

func (c *Controller) sendStopReplica(bc brokerChannel, broker int32, tps []TP) {
	topics, _ := groupByTopic(tps)
	bc.enqueue(BuildStopReplica(c.state, broker, tps), func(resp kmsg.Response, err error) {
		ok := err == nil
		if r, isStop := resp.(*kmsg.StopReplicaResponse); ok && isStop {
			if r.ErrorCode != 0 {
				ok = false
			}
			for _, p := range r.Partitions {
				if p.ErrorCode != 0 {
					ok = false
				}
			}
		}
		c.post(func(p *pendingEvents) {
			for _, t := range topics {
				p.stopReplica = append(p.stopReplica, stopReplicaResult{topic: t, broker: broker, ok: ok})
			}
		})
	})
}

// writeStates writes partition states and, first, the assignments of the
// named topics as the state holds them, in transactions fenced by the
// controller epoch (several when one would pass ZooKeeper's request size
// limit: state_writes.go).
func (c *Controller) writeStates(ctx context.Context, writes []StateWrite, assignments []string) error {
	ops, err := stateWriteOps(ctx, c.st, c.epochZkVersion, c.state, writes, assignments)
	if err != nil {
		return err
	}
	if err := multiChunked(ctx, c.st, ops, c.storeParallelism(multiParallelism)); err != nil {
		return c.fenceErr(ctx, err, "write partition states")
	}
	return nil
}

// stateWriteOps builds writeStates' transaction: the check of the
// controller epoch's znode version, the named topics' assignments from s,
// and the partition states (creating their parent znodes where missing).
func stateWriteOps(ctx context.Context, st Store, epochZkVersion int32, s *ClusterState, writes []StateWrite, assignments []string) ([]store.Op, error) {
	ops := []store.Op{store.CheckOp{Path: ControllerEpochPath, Version: epochZkVersion}}
	// The decisions fill writes in map order; sorted, the store sees the
	// same transaction for the same decision (a simulation seed replays).
	writes = slices.Clone(writes)
	slices.SortFunc(writes, func(x, y StateWrite) int { return compareTPs(x.TP, y.TP) })
	for _, name := range assignments {
		t := s.Topics[name]
		if t == nil {
			continue
		}
		a := TopicAssignment{Name: name, TopicID: t.ID, Partitions: t.Replicas, Adding: t.Adding, Removing: t.Removing}
		ops = append(ops, store.SetOp{Path: TopicPath(name), Data: encodeTopic(a), Version: store.AnyVersion})
	}
	// missing maps each parent znode ensure looked at to whether it was
	// missing, and so is created by these ops. A partition's znode cannot
	// be under a partitions znode that does not exist: a new topic's are
	// created without asking the store about each, which took one round
	// trip per partition (0.26-2.26 s for the 1,000-4,000 partitions of
	// one creation in the 50,000-partition benchmark).
	missing := map[string]bool{}
	ensure := func(path string, parentMissing bool) (bool, error) {
		if m, seen := missing[path]; seen {
			return m, nil
		}
		m := parentMissing
		if !m {
			ok, _, err := st.Exists(ctx, path)
			if err != nil {
				return false, err
			}
			m = !ok
		}
		if m {
			ops = append(ops, store.CreateOp{Path: path})
		}
		missing[path] = m
		return m, nil
	}
	for _, w := range writes {
		path := PartitionStatePath(w.TP.Topic, w.TP.Partition)
		if w.Create {
			parentMissing, err := ensure(PartitionsPath(w.TP.Topic), false)
			if err != nil {
				return nil, err
			}
			if _, err := ensure(PartitionPath(w.TP.Topic, w.TP.Partition), parentMissing); err != nil {
				return nil, err
			}
			ops = append(ops, store.CreateOp{Path: path, Data: encodePartitionState(w.State)})
		} else {
			ops = append(ops, store.SetOp{Path: path, Data: encodePartitionState(w.State), Version: w.ExpectedVersion})
		}
	}
	return ops, nil
}
