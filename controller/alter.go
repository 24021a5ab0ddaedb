package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OnAlterPartition decides an AlterPartition request (ISR changes proposed
// by partition leaders), as Kafka's ZooKeeper-mode controller does: the
// requester's broker epoch must be current, it must lead the partition at
// the same leader epoch and partition epoch (the state znode's version), and
// every new ISR member must be live, its replica not in a failed log dir
// (replicaOnline) and, when the leader names it with a broker epoch (v3,
// KIP-903), registered at that epoch. Accepted changes keep the leader epoch
// and bump the partition epoch; every live broker gets UpdateMetadata.
func (s *ClusterState) OnAlterPartition(req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, Actions) {
	a := newActions()
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	if b, ok := s.Live[req.BrokerID]; !ok || (req.BrokerEpoch != -1 && req.BrokerEpoch != b.Epoch) {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, a
	}
	byID := map[[16]byte]string{}
	for name, t := range s.Topics {
		byID[t.ID] = name
	}
	var changed []TP
	for _, rt := range req.Topics {
		out := kmsg.NewAlterPartitionResponseTopic()
		out.Topic, out.TopidID = rt.Topic, rt.TopicID
		name := rt.Topic
		unknownCode := kerr.UnknownTopicOrPartition.Code
		if req.Version >= 2 {
			name = byID[rt.TopicID]
			unknownCode = kerr.UnknownTopicID.Code
		}
		t := s.Topics[name]
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterPartitionResponseTopicPartition()
			p.Partition = rp.Partition
			if t == nil || s.Deleting[name] {
				p.ErrorCode = unknownCode
				out.Partitions = append(out.Partitions, p)
				continue
			}
			code, st := s.alterOne(&a, req, TP{name, rp.Partition}, rp)
			p.ErrorCode = code
			if code == 0 {
				p.LeaderID, p.LeaderEpoch, p.ISR = st.Leader, st.LeaderEpoch, slices.Clone(st.ISR)
				p.LeaderRecoveryState, p.PartitionEpoch = st.LeaderRecoveryState, st.ZkVersion
				changed = append(changed, TP{name, rp.Partition})
			}
			out.Partitions = append(out.Partitions, p)
		}
		resp.Topics = append(resp.Topics, out)
	}
	if len(a.Writes) > 0 {
		a.updateAll(s, changed...)
	}
	// An ISR change may complete a reassignment (Kafka's
	// maybeCompleteReassignment after AlterPartition).
	for _, tp := range changed {
		s.maybeCompleteReassignment(&a, tp)
	}
	return resp, a
}

func (s *ClusterState) alterOne(a *Actions, req *kmsg.AlterPartitionRequest, tp TP, rp kmsg.AlterPartitionRequestTopicPartition) (int16, PartitionState) {
	t := s.Topics[tp.Topic]
	replicas, ok := t.Replicas[tp.Partition]
	cur, started := t.States[tp.Partition]
	if !ok || !started {
		return kerr.UnknownTopicOrPartition.Code, PartitionState{}
	}
	if cur.Leader != req.BrokerID {
		return kerr.NotLeaderForPartition.Code, PartitionState{}
	}
	if rp.LeaderEpoch != cur.LeaderEpoch {
		return kerr.FencedLeaderEpoch.Code, PartitionState{}
	}
	newISR := rp.NewISR
	epochs := map[int32]int64{}
	if req.Version >= 3 {
		newISR = nil
		for _, e := range rp.NewEpochISR {
			newISR = append(newISR, e.BrokerID)
			epochs[e.BrokerID] = e.BrokerEpoch
		}
	}
	if rp.PartitionEpoch != cur.ZkVersion {
		// A retry of a change that was applied is answered with the result.
		if slices.Equal(newISR, cur.ISR) && rp.LeaderRecoveryState == cur.LeaderRecoveryState {
			return 0, cur
		}
		return kerr.InvalidUpdateVersion.Code, PartitionState{}
	}
	if rp.LeaderRecoveryState == 1 && cur.LeaderRecoveryState == 0 {
		return kerr.InvalidRequest.Code, PartitionState{}
	}
	if !slices.Contains(newISR, cur.Leader) {
		return kerr.InvalidRequest.Code, PartitionState{}
	}
	for _, id := range newISR {
		// Online, not only live: Kafka 3.9's ZooKeeper-mode controller
		// checks just liveBrokerIds, but a leader can propose a replica
		// the controller has just taken out for a failed log dir (a fetch
		// sent before the failure completes afterwards), and accepting it
		// would count a replica that stores nothing towards acks=all.
		// A member named with a broker epoch (v3, KIP-903) must be the
		// registration the controller knows: a leader's change resent
		// after the member restarted names the earlier incarnation, whose
		// log a power failure may have cut (KAFKA-14139). Kafka 3.9's
		// ZooKeeper-mode controller ignores these epochs, as its leaders
		// send -1; -1, and any epoch no registration has (czxids are
		// positive), skip the check, so such a leader is never refused.
		if !slices.Contains(replicas, id) || !s.replicaOnline(id, tp) || (epochs[id] > 0 && epochs[id] != s.Live[id].Epoch) {
			// INELIGIBLE_REPLICA came with v2 (KIP-841); before, Kafka's
			// controllers answer OPERATION_NOT_ATTEMPTED, which the
			// leader handles alike (replica.alterErrorOutcome).
			if req.Version >= 2 {
				return kerr.IneligibleReplica.Code, PartitionState{}
			}
			return kerr.OperationNotAttempted.Code, PartitionState{}
		}
	}
	if slices.Equal(newISR, cur.ISR) && rp.LeaderRecoveryState == cur.LeaderRecoveryState {
		return 0, cur
	}
	next := PartitionState{Leader: cur.Leader, LeaderEpoch: cur.LeaderEpoch, ISR: slices.Clone(newISR), ControllerEpoch: s.Epoch, LeaderRecoveryState: rp.LeaderRecoveryState}
	a.Writes = append(a.Writes, StateWrite{TP: tp, State: next, ExpectedVersion: cur.ZkVersion})
	next.ZkVersion = cur.ZkVersion + 1
	t.States[tp.Partition] = next
	return 0, next
}

// OnControlledShutdown moves leadership off a broker that is shutting down,
// as Kafka's controller does: for each partition with more than one replica
// that it leads, the first other live ISR member in assignment order takes
// over; where it is a follower, it leaves the ISR. The partitions it still
// leads are returned; the broker retries until there are none.
func (s *ClusterState) OnControlledShutdown(id int32, brokerEpoch int64) (int16, []TP, Actions) {
	a := newActions()
	b, ok := s.Live[id]
	if !ok {
		return kerr.BrokerNotAvailable.Code, nil, a
	}
	if brokerEpoch != -1 && brokerEpoch < b.Epoch {
		return kerr.StaleBrokerEpoch.Code, nil, a
	}
	s.ShuttingDown[id] = true
	var remaining []TP
	for _, tp := range s.AllPartitions() {
		t := s.Topics[tp.Topic]
		st, started := t.States[tp.Partition]
		replicas := t.Replicas[tp.Partition]
		if !started || s.Deleting[tp.Topic] || len(replicas) <= 1 || !slices.Contains(replicas, id) {
			continue
		}
		isr := filter(st.ISR, s.isLive)
		switch {
		case st.Leader == id:
			var leader int32 = NoLeader
			for _, r := range replicas {
				if slices.Contains(isr, r) {
					leader = r
					break
				}
			}
			if leader == NoLeader {
				remaining = append(remaining, tp)
				continue
			}
			s.changeState(&a, tp, PartitionState{Leader: leader, LeaderEpoch: st.LeaderEpoch + 1, ISR: isr, LeaderRecoveryState: st.LeaderRecoveryState})
		case slices.Contains(st.ISR, id):
			s.changeState(&a, tp, PartitionState{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch + 1, ISR: isr, LeaderRecoveryState: st.LeaderRecoveryState})
		}
	}
	return 0, remaining, a
}

// call runs f on the event loop and waits for it; f gets false when this
// broker is not (or stops being) the active controller. When ctx ends
// first, call returns its error while f may still run later: the caller
// must then not read what f writes.
func (c *Controller) call(ctx context.Context, f func(loopCtx context.Context, active bool)) error {
	done := make(chan struct{})
	c.submit(ctx, func(loopCtx context.Context, active bool) {
		f(loopCtx, active)
		close(done)
	})
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// AlterPartition serves an AlterPartition request from a partition leader.
// A broker that is not the active controller answers NOT_CONTROLLER.
func (c *Controller) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	var resp *kmsg.AlterPartitionResponse
	err := c.call(ctx, func(loopCtx context.Context, active bool) { resp = c.serveAlterPartition(loopCtx, active, req) })
	if err != nil {
		return nil, err // f may still run later and write resp: never read it
	}
	return resp, nil
}

func (c *Controller) serveAlterPartition(ctx context.Context, active bool, req *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	if !active {
		resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	resp, acts := c.state.OnAlterPartition(req)
	if err := c.execute(ctx, acts); err != nil {
		c.failed(err)
		resp = req.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode = kerr.NotController.Code
	}
	return resp
}

// ControlledShutdown serves a ControlledShutdown request.
func (c *Controller) ControlledShutdown(ctx context.Context, req *kmsg.ControlledShutdownRequest) (*kmsg.ControlledShutdownResponse, error) {
	var resp *kmsg.ControlledShutdownResponse
	err := c.call(ctx, func(loopCtx context.Context, active bool) { resp = c.serveControlledShutdown(loopCtx, active, req) })
	if err != nil {
		return nil, err // f may still run later and write resp: never read it
	}
	return resp, nil
}

func (c *Controller) serveControlledShutdown(ctx context.Context, active bool, req *kmsg.ControlledShutdownRequest) *kmsg.ControlledShutdownResponse {
	resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
	if !active {
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	code, remaining, acts := c.state.OnControlledShutdown(req.BrokerID, req.BrokerEpoch)
	if c.state.Faults.ControlledShutdownNotPerformed {
		acts = Actions{}
	}
	if err := c.execute(ctx, acts); err != nil {
		c.failed(err)
		resp.ErrorCode = kerr.NotController.Code
		return resp
	}
	resp.ErrorCode = code
	for _, tp := range remaining {
		resp.PartitionsRemaining = append(resp.PartitionsRemaining, kmsg.ControlledShutdownResponsePartitionsRemaining{Topic: tp.Topic, Partition: tp.Partition})
	}
	return resp
}
