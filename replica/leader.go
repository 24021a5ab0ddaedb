package replica

import (
	"fmt"
	"slices"
)

// UpdateFollowerFetch records a follower's fetch at fetchOffset (its log
// end offset) with its log start offset and broker epoch (-1: not sent),
// advances the HW and proposes adding the follower to the ISR once it
// qualifies. Call it before reading for the follower, so that the HW in
// the answer already counts this fetch.
//
// A broker epoch below the one recorded is an earlier incarnation's fetch
// (one parked in a long poll, say) and is refused with ErrStaleBrokerEpoch
// (a *StaleBrokerEpochError), as Kafka's KRaft-mode leader refuses a fetch
// below the registered epoch; a LeaderAndISR that leaves the follower out
// of the ISR forgets the recorded one (become), so that a follower whose
// epoch went down is not refused for good. A higher one is a new
// incarnation, whose log a power failure may have cut: what the leader
// knew from the earlier one's fetches is forgotten (followerState.reset).
// An epoch <= 0 is none, as Manager.brokerEpoch and the controller take
// it: ZooKeeper's czxids start above 0, so 0 is a broker not registered
// yet, not an incarnation.
func (p *Partition) UpdateFollowerFetch(replicaID int32, brokerEpoch, fetchOffset, logStartOffset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.updateFollowerFetchLocked(replicaID, brokerEpoch, fetchOffset, logStartOffset, -1)
	return err
}

// RecordQuietFollowerFetch is UpdateFollowerFetch for a partition that a
// follower's incremental fetch skips as quiet (its session stamped it
// with state): it records the fetch only if the partition's FetchState is
// still state, and reports whether it still is once the fetch is
// recorded, which it is not when the fetch moved the high watermark (the
// follower must then be told). It takes the partition's lock and its
// log's once, where FetchState, UpdateFollowerFetch and FetchState again
// took each three times: a follower's fetch of 16,000 idle partitions
// does this for each.
func (p *Partition) RecordQuietFollowerFetch(state FetchState, replicaID int32, brokerEpoch, fetchOffset, logStartOffset int64) (quiet bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != state.Leader || p.leaderEpoch != state.LeaderEpoch {
		return false, nil
	}
	offsets := p.log.Offsets()
	if offsets != state.Offsets {
		return false, nil
	}
	hwMoved, err := p.updateFollowerFetchLocked(replicaID, brokerEpoch, fetchOffset, logStartOffset, offsets.LogEnd)
	return err == nil && !hwMoved, err
}

// updateFollowerFetchLocked is UpdateFollowerFetch under p.mu, the
// leader's log end offset leaderLEO (-1: read it); hwMoved reports
// whether the fetch moved the high watermark.
func (p *Partition) updateFollowerFetchLocked(replicaID int32, brokerEpoch, fetchOffset, logStartOffset, leaderLEO int64) (hwMoved bool, err error) {
	if p.leader != p.localID {
		return false, ErrNotLeader
	}
	f, ok := p.followers[replicaID]
	if !ok {
		return false, fmt.Errorf("%w: %d fetching %s", ErrUnknownReplica, replicaID, p.tp)
	}
	if brokerEpoch <= 0 {
		brokerEpoch = -1
	}
	if brokerEpoch > 0 && f.brokerEpoch > 0 && brokerEpoch != f.brokerEpoch {
		if brokerEpoch < f.brokerEpoch {
			first := f.refusedBrokerEpoch != brokerEpoch
			f.refusedBrokerEpoch = brokerEpoch
			return false, &StaleBrokerEpochError{ReplicaID: replicaID, TopicPartition: p.tp, BrokerEpoch: brokerEpoch, Recorded: f.brokerEpoch, First: first}
		}
		f.reset()
	}
	f.brokerEpoch = brokerEpoch
	prevLEO := f.leo
	if leaderLEO < 0 {
		leaderLEO = p.log.LogEndOffset()
	}
	f.recordFetch(fetchOffset, leaderLEO, p.now())
	if logStartOffset != f.logStartOffset {
		f.logStartOffset = logStartOffset
		// DeleteRecords waits for followers' log start offsets.
		wake(p.watchers)
	}
	// Only the follower's new log end offset can move the HW here (what
	// else it depends on recomputes it where it changes), so a fetch at
	// the same offset, an idle follower's every fetch, skips it, as
	// Kafka's updateFollowerFetchState does.
	if f.leo != prevLEO {
		hwMoved = p.maybeAdvanceHighWatermarkLocked()
	}
	p.maybeExpandISRLocked(replicaID)
	return hwMoved, nil
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
