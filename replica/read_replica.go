package replica

import (
	"cmp"
	"slices"
	"time"
)

// ReadReplica is a replica a consumer could fetch from, as Kafka's
// ReplicaView: its log end offset and how long ago it was last caught up
// with the leader (0 for the leader itself).
type ReadReplica struct {
	ID            int32
	LogEndOffset  int64
	SinceCaughtUp time.Duration
}

// ReadReplicas returns, while this broker leads, itself and the followers a
// consumer fetching at fetchOffset may be sent to (KIP-392), by the rules of
// Kafka's ReplicaManager.findPreferredReadReplica: followers in the ISR the
// controller accepted (a lagging follower would leave the consumer behind)
// whose log holds fetchOffset (log start <= fetchOffset <= log end).
func (p *Partition) ReadReplicas(fetchOffset int64) (leader ReadReplica, followers []ReadReplica, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != p.localID {
		return ReadReplica{}, nil, false
	}
	now := p.now()
	for _, id := range p.isr {
		f, tracked := p.followers[id]
		if !tracked || f.leo < fetchOffset || f.logStartOffset > fetchOffset {
			continue
		}
		followers = append(followers, ReadReplica{ID: id, LogEndOffset: f.leo, SinceCaughtUp: now.Sub(f.lastCaughtUp)})
	}
	return ReadReplica{ID: p.localID, LogEndOffset: p.log.LogEndOffset()}, followers, true
}

// SelectRackAware is Kafka's RackAwareReplicaSelector: a consumer with a
// client.rack is sent to a replica in its rack, the leader when it is there
// or none is; among followers in the rack, the one with the highest log end
// offset, then the most recently caught up, then the highest id. rackOf
// gives a broker's rack and whether the consumer's listener reaches it (a
// broker without an endpoint there has no rack, as Kafka's Node.noNode).
// The result is the follower to name as preferred read replica, or -1 for
// the leader (which Kafka never names).
func SelectRackAware(clientRack string, rackOf func(int32) (string, bool), leader ReadReplica, followers []ReadReplica) int32 {
	if clientRack == "" {
		return -1
	}
	if r, ok := rackOf(leader.ID); ok && r == clientRack {
		return -1
	}
	var same []ReadReplica
	for _, f := range followers {
		if r, ok := rackOf(f.ID); ok && r == clientRack {
			same = append(same, f)
		}
	}
	if len(same) == 0 {
		return -1
	}
	return slices.MaxFunc(same, func(a, b ReadReplica) int {
		return cmp.Or(
			cmp.Compare(a.LogEndOffset, b.LogEndOffset),
			cmp.Compare(b.SinceCaughtUp, a.SinceCaughtUp),
			cmp.Compare(a.ID, b.ID),
		)
	}).ID
}

// followHighWatermark sets a follower's HW from its leader's answer and
// wakes the consumers long-polling this follower (KIP-392), whose reads
// stop at the HW.
func (p *Partition) followHighWatermark(hw int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	before := p.log.HighWatermark()
	p.log.SetHighWatermark(hw)
	if p.log.HighWatermark() != before {
		wake(p.watchers)
	}
}
