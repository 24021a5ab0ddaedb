package replica

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterState is where a proposed ISR change (Partition.proposedISR) stands
// with the controller, as Kafka's PendingPartitionChange. Until the
// controller's answer is known the change stays pending, whatever happened
// to the request: the controller may have applied it, so the HW keeps
// counting the maximal ISR.
type alterState int8

const (
	// alterUnsent: to send, for the first time or again after a failure.
	alterUnsent alterState = iota
	// alterInFlight: an AlterPartition carrying it is out.
	alterInFlight
	// alterAwaitingLeaderAndISR: the controller answered that our state is
	// stale; only its next LeaderAndISR ends the change, none is resent.
	alterAwaitingLeaderAndISR
)

// alterOutcome is what the leader does with a change the controller
// answered with an error.
type alterOutcome int8

const (
	// alterRetry: the change may or may not have been applied; send it again.
	alterRetry alterOutcome = iota
	// alterReset: the controller did not apply it; back to the committed ISR.
	alterReset
	// alterAwait: keep it pending until a LeaderAndISR.
	alterAwait
)

// alterErrorOutcome classifies an AlterPartition error as Kafka's
// Partition.handleAlterPartitionError: OPERATION_NOT_ATTEMPTED and
// INELIGIBLE_REPLICA mean the partition epoch is right and the change was
// not applied by any controller, so resetting is safe; errors that mean our
// state is out of date wait for new metadata; anything else is retried.
func alterErrorOutcome(code int16) alterOutcome {
	switch code {
	case kerr.OperationNotAttempted.Code, kerr.IneligibleReplica.Code:
		return alterReset
	case kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code, kerr.FencedLeaderEpoch.Code,
		kerr.InvalidUpdateVersion.Code, kerr.InvalidRequest.Code, kerr.NewLeaderElected.Code:
		return alterAwait
	}
	return alterRetry
}

// proposeLocked makes isr the pending ISR change. Each member is named
// with its broker epoch as of now (KIP-903), as Kafka's leader does when
// it prepares a change: its own for the leader, a follower's from its
// last fetch (-1 when that fetch carried none, which the controller does
// not check). The change is resent with these epochs until the
// controller answers, so if a member registers again meanwhile (a
// restart, maybe with a log a power failure cut) the change names its
// earlier incarnation and is refused, INELIGIBLE_REPLICA, instead of
// putting the new one in the ISR on the earlier one's fetches
// (KAFKA-14139). Taking the epochs at each send instead would name the
// new incarnation as soon as it fetched once, whatever its log.
func (p *Partition) proposeLocked(isr []int32) {
	p.proposedISR, p.alter = isr, alterUnsent
	p.proposedEpochs = make([]int64, len(isr))
	for i, id := range isr {
		p.proposedEpochs[i] = -1
		switch f := p.followers[id]; {
		case p.faults.NoBrokerEpochs:
		case id == p.localID && p.brokerEpoch != nil:
			p.proposedEpochs[i] = p.brokerEpoch()
		case f != nil:
			p.proposedEpochs[i] = f.brokerEpoch
		}
	}
	if p.isrChanged != nil {
		p.isrChanged()
	}
}

// takeProposal returns the pending ISR change to send, marking it in
// flight, or ok=false when there is none or it is not to be sent now.
func (p *Partition) takeProposal() (kmsg.AlterPartitionRequestTopicPartition, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proposedISR == nil || p.alter != alterUnsent || p.leader != p.localID {
		return kmsg.AlterPartitionRequestTopicPartition{}, false
	}
	p.alter = alterInFlight
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition = p.tp.Partition
	rp.LeaderEpoch = p.leaderEpoch
	rp.PartitionEpoch = p.zkVersion
	rp.NewISR = slices.Clone(p.proposedISR)
	for i, id := range p.proposedISR {
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = id, p.proposedEpochs[i]
		rp.NewEpochISR = append(rp.NewEpochISR, e)
	}
	return rp, true
}

// alterFailed puts an in-flight change whose answer never came (the
// request failed, or the answer left the partition out) back to be sent
// again; the controller may have applied it, so it stays pending.
func (p *Partition) alterFailed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proposedISR != nil && p.alter == alterInFlight {
		p.alter = alterUnsent
		if p.faults.ForgetFailedISRChange {
			p.proposedISR = nil
			p.maybeAdvanceHighWatermarkLocked()
		}
	}
}

// applyAlterPartition applies the controller's answer for this partition
// and returns the error it carried, if any; see alterErrorOutcome. An
// accepted answer for another leader epoch or an older partition epoch is
// stale: the change stays pending until a LeaderAndISR, as in Kafka.
func (p *Partition) applyAlterPartition(rp kmsg.AlterPartitionResponseTopicPartition) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proposedISR == nil || p.alter != alterInFlight {
		return nil // a LeaderAndISR replaced the proposal meanwhile
	}
	if rp.ErrorCode != 0 {
		switch alterErrorOutcome(rp.ErrorCode) {
		case alterReset:
			p.proposedISR, p.alter = nil, alterUnsent
			p.maybeAdvanceHighWatermarkLocked()
		case alterAwait:
			p.alter = alterAwaitingLeaderAndISR
		case alterRetry:
			p.alter = alterUnsent
		}
		return kerr.ErrorForCode(rp.ErrorCode)
	}
	if rp.LeaderEpoch != p.leaderEpoch || rp.PartitionEpoch < p.zkVersion || rp.LeaderID != p.localID {
		p.alter = alterAwaitingLeaderAndISR
		return fmt.Errorf("stale AlterPartition answer: leader %d epoch %d partition epoch %d, ours %d/%d",
			rp.LeaderID, rp.LeaderEpoch, rp.PartitionEpoch, p.leaderEpoch, p.zkVersion)
	}
	p.isrStats.accepted(len(p.isr), len(rp.ISR))
	p.isr, p.zkVersion = slices.Clone(rp.ISR), rp.PartitionEpoch
	p.proposedISR, p.alter = nil, alterUnsent
	p.maybeAdvanceHighWatermarkLocked()
	return nil
}

func errorForCode(code int16) error { return kerr.ErrorForCode(code) }
