package replica

import (
	"slices"
	"time"
)

// followerState is what a leader knows of one follower, from its fetches.
// Invariant: leo and logStartOffset are -1 until the follower's first fetch
// in this leadership, or in the follower's current broker epoch.
type followerState struct {
	leo int64
	// brokerEpoch is the follower's broker epoch (the czxid of its
	// registration) from its last fetch (Fetch v15+ replica_state), -1
	// when that fetch carried none. An ISR change names each member with
	// it (KIP-903), so that a controller refuses a member that registered
	// again since: its place would rest on an earlier incarnation's log.
	brokerEpoch int64
	// refusedBrokerEpoch is the last stale broker epoch refused
	// (StaleBrokerEpochError.First), 0 for none.
	refusedBrokerEpoch int64
	// logStartOffset is the follower's, from its fetch (DeleteRecords'
	// low watermark, low_watermark.go).
	logStartOffset int64
	// lastCaughtUp is the last time the follower had everything the leader
	// had; ISR membership is judged by it, as Kafka's replica.lag.time.max.ms.
	lastCaughtUp time.Time
	// lastFetchLeaderLEO and lastFetch are the leader's LEO and the time at
	// the follower's previous fetch: reaching that LEO now proves the
	// follower was caught up at that earlier time.
	lastFetchLeaderLEO int64
	lastFetch          time.Time
}

// newFollowerState starts tracking a follower when this broker becomes
// leader. ISR members count as caught up now, so that they are not dropped
// before they had a chance to fetch.
func newFollowerState(inISR bool, now time.Time) *followerState {
	f := &followerState{leo: -1, brokerEpoch: -1, logStartOffset: -1, lastFetchLeaderLEO: -1}
	if inISR {
		f.lastCaughtUp = now
	}
	return f
}

// reset forgets what the earlier incarnation's fetches told, when a
// fetch shows the follower registered again. Kafka 3.9 keeps it (its
// Replica state only takes the new epoch), but none of it describes the
// new incarnation's log: its caught-up time would keep an emptied replica
// in the ISR for up to replica.lag.time.max.ms, and the earlier leader
// LEO would credit it with having been caught up before it existed. The
// controller drops a bounced broker from the ISR anyway; the leader now
// judges it the same way, as a replica it never heard from.
func (f *followerState) reset() {
	*f = *newFollowerState(false, time.Time{})
}

// recordFetch updates the state for a fetch at fetchOffset while the
// leader's LEO is leaderLEO, as Kafka's Replica.updateFetchState does.
func (f *followerState) recordFetch(fetchOffset, leaderLEO int64, now time.Time) {
	switch {
	case fetchOffset >= leaderLEO:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, now)
	case fetchOffset >= f.lastFetchLeaderLEO && f.lastFetchLeaderLEO >= 0:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, f.lastFetch)
	}
	f.leo = fetchOffset
	f.lastFetchLeaderLEO = leaderLEO
	f.lastFetch = now
}

// caughtUp reports whether the follower is in sync: it has the leader's
// LEO, or had everything the leader had within lagMax.
func (f *followerState) caughtUp(leaderLEO int64, now time.Time, lagMax time.Duration) bool {
	return f.leo == leaderLEO || now.Sub(f.lastCaughtUp) <= lagMax
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// shrinkISR returns the ISR without the followers that fell behind for
// longer than lagMax, and whether any did. The leader always stays.
func shrinkISR(isr []int32, self int32, followers map[int32]*followerState, leaderLEO int64, now time.Time, lagMax time.Duration) ([]int32, bool) {
	out := make([]int32, 0, len(isr))
	for _, id := range isr {
		f := followers[id]
		if id != self && (f == nil || !f.caughtUp(leaderLEO, now, lagMax)) {
			continue
		}
		out = append(out, id)
	}
	return out, len(out) != len(isr)
}

// canJoinISR is Kafka's rule for adding a follower back: it has reached
// the high watermark and everything written since this leadership began,
// so electing it cannot lose a committed record.
func canJoinISR(followerLEO, hw, leaderEpochStartOffset int64) bool {
	return followerLEO >= 0 && followerLEO >= hw && followerLEO >= leaderEpochStartOffset
}

// maximalISR is the committed ISR together with a proposed one (KIP-497):
// while the controller has not answered, the HW must hold for both, so it
// never advances on an ISR the controller may refuse.
func maximalISR(isr, proposed []int32) []int32 {
	out := slices.Clone(isr)
	for _, id := range proposed {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// knownLEOs maps the followers whose LEO is known; highWatermark treats the
// others as having nothing past the current HW.
func knownLEOs(followers map[int32]*followerState) map[int32]int64 {
	out := make(map[int32]int64, len(followers))
	for id, f := range followers {
		if f.leo >= 0 {
			out[id] = f.leo
		}
	}
	return out
}

// truncationOffset is the package's truncationOffset unless
// NoEpochStartAtElection keeps the log on an UNDEFINED answer.
func (f Faults) truncationOffset(leaderEpoch int32, leaderEnd, leo, hw int64, localEnd func(int32) (int32, int64)) (offset int64, done bool) {
	if f.NoEpochStartAtElection && leaderEnd < 0 {
		return leo, true
	}
	return truncationOffset(leaderEpoch, leaderEnd, leo, hw, localEnd)
}

// truncationOffset decides where a new follower cuts its log from the
// leader's OffsetForLeaderEpoch answer (leaderEpoch, leaderEnd) to the
// follower's latest epoch, as Kafka's fetcher does. localEnd gives the
// follower's own end offset for an epoch (largest epoch <= it and where
// the next begins). done is false when the leader answered with an epoch
// the follower does not have: it cuts to the end of its own largest epoch
// below that one and asks again.
func truncationOffset(leaderEpoch int32, leaderEnd, leo, hw int64, localEnd func(int32) (int32, int64)) (offset int64, done bool) {
	if leaderEnd < 0 {
		// UNDEFINED: the leader cannot say where our epoch ends. Only the
		// HW is known to be on the leader, so cut to it, as Kafka's fetcher
		// truncates to its initial fetch offset (the HW).
		return min(hw, leo), true
	}
	if leaderEpoch < 0 {
		return min(leaderEnd, leo), true
	}
	followerEpoch, followerEnd := localEnd(leaderEpoch)
	switch {
	case followerEpoch < 0 || followerEnd < 0:
		return min(leaderEnd, leo), true
	case followerEpoch != leaderEpoch:
		return min(followerEnd, leo), false
	}
	return min(followerEnd, leaderEnd, leo), true
}
