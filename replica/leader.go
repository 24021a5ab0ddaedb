package replica

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UpdateFollowerFetch records a follower's fetch at fetchOffset (its log
// end offset), advances the HW and proposes adding the follower to the ISR
// once it qualifies. Call it before reading for the follower, so that the
// HW in the answer already counts this fetch.
func (p *Partition) UpdateFollowerFetch(replicaID int32, fetchOffset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != p.localID {
		return ErrNotLeader
	}
	f, ok := p.followers[replicaID]
	if !ok {
		return fmt.Errorf("%w: %d fetching %s", ErrUnknownReplica, replicaID, p.tp)
	}
	f.recordFetch(fetchOffset, p.log.LogEndOffset(), p.now())
	p.maybeAdvanceHighWatermarkLocked()
	p.maybeExpandISRLocked(replicaID)
	return nil
}

// maybeExpandISRLocked proposes the ISR plus replicaID when it qualifies
// and no other change is pending.
func (p *Partition) maybeExpandISRLocked(replicaID int32) {
	if p.proposedISR != nil || slices.Contains(p.isr, replicaID) || !slices.Contains(p.replicas, replicaID) {
		return
	}
	if !canJoinISR(p.followers[replicaID].leo, p.log.HighWatermark(), p.leaderEpochStartOffset) {
		return
	}
	p.proposeLocked(append(slices.Clone(p.isr), replicaID))
}

// maybeShrinkISR proposes dropping followers that lagged for longer than
// replica.lag.time.max.ms. The manager calls it periodically.
func (p *Partition) maybeShrinkISR() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != p.localID || p.proposedISR != nil {
		return
	}
	isr, shrunk := shrinkISR(p.isr, p.localID, p.followers, p.log.LogEndOffset(), p.now(), p.lagMax)
	if shrunk {
		p.proposeLocked(isr)
	}
}

func (p *Partition) proposeLocked(isr []int32) {
	p.proposedISR, p.alterSent = isr, false
	if p.isrChanged != nil {
		p.isrChanged()
	}
}

// takeProposal returns the pending ISR change to send, marking it in
// flight, or ok=false when there is none or it is already in flight.
func (p *Partition) takeProposal() (kmsg.AlterPartitionRequestTopicPartition, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proposedISR == nil || p.alterSent || p.leader != p.localID {
		return kmsg.AlterPartitionRequestTopicPartition{}, false
	}
	p.alterSent = true
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = p.tp.Partition
	rp.LeaderEpoch = p.leaderEpoch
	rp.PartitionEpoch = p.zkVersion
	rp.NewISR = slices.Clone(p.proposedISR)
	for _, id := range p.proposedISR {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		// -1: the controller does not check the member's broker epoch.
		e.BrokerID, e.BrokerEpoch = id, -1
		rp.NewEpochISR = append(rp.NewEpochISR, e)
	}
	return rp, true
}

// alterFailed forgets the in-flight proposal after a failed request; the
// next fetch or shrink check proposes again.
func (p *Partition) alterFailed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.alterSent {
		p.proposedISR, p.alterSent = nil, false
	}
	p.maybeAdvanceHighWatermarkLocked()
}

// applyAlterPartition applies the controller's answer for this partition.
// It reports whether the proposal was accepted. Errors that mean our state
// is stale (INVALID_UPDATE_VERSION, FENCED_LEADER_EPOCH, ...) drop the
// proposal; the controller's next LeaderAndISR brings the current state.
func (p *Partition) applyAlterPartition(rp kmsg.AlterPartitionResponseTopicPartition) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.alterSent {
		return nil // a LeaderAndISR replaced the proposal meanwhile
	}
	p.proposedISR, p.alterSent = nil, false
	defer p.maybeAdvanceHighWatermarkLocked()
	if rp.ErrorCode != 0 {
		return kerr.ErrorForCode(rp.ErrorCode)
	}
	if rp.LeaderEpoch != p.leaderEpoch || rp.PartitionEpoch < p.zkVersion || rp.LeaderID != p.localID {
		return fmt.Errorf("stale AlterPartition answer: leader %d epoch %d partition epoch %d, ours %d/%d",
			rp.LeaderID, rp.LeaderEpoch, rp.PartitionEpoch, p.leaderEpoch, p.zkVersion)
	}
	p.isr, p.zkVersion = slices.Clone(rp.ISR), rp.PartitionEpoch
	return nil
}

func errorForCode(code int16) error { return kerr.ErrorForCode(code) }
