package sim

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A leader's ISR expansion is retried unchanged until the controller
// answers (replica/alter.go), and it names its members without their
// broker epochs (-1), as Kafka's ZooKeeper-mode brokers do before KIP-903:
// a proposal made while a follower's earlier incarnation was caught up
// can reach a controller after that follower restarted, and the
// controller, which sees only a live broker, applies it (KAFKA-14139).
// The restarted member, its log maybe cut by a power failure, is then in
// the ISR without the leader's log until it catches up or is shrunk out.
// Seed 897 did this (seed 4213 does now, TestSimStaleProposalApplied):
// broker 2 restarts empty at 20.000 s and leader 3's expansion to [3 2],
// proposed from broker 2's fetches before its power failure at 12.67 s
// and lost since with the controller, is applied by broker 2 itself as
// the new controller. Such a member is staleInISR
// (durability.go) as long as it stays in the ISR; what it would cost at
// an election the acknowledged records' checks still see.

// proposalKey is one ISR change of a leader incarnation, resent unchanged.
type proposalKey struct {
	leader                    int32
	inc                       int
	part, leaderEpoch, zkVers int32
	isr                       string
}

// noteProposal records, at a proposal's first send, the broker epoch of
// each member then (0 when it was not registered).
func (c *Cluster) noteProposal(b *Broker, inc int, req *kmsg.AlterPartitionRequest) {
	for _, rp := range c.ownProposals(b, req) {
		k := proposalKey{b.id, inc, rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, fmt.Sprint(rp.NewISR)}
		if _, ok := c.proposals[k]; ok {
			continue
		}
		epochs := map[int32]int64{}
		for _, id := range rp.NewISR {
			if o := c.brokers[id-1]; o.up && o.registered {
				epochs[id] = o.brokerEpoch
			}
		}
		c.proposals[k] = epochs
	}
}

// notePropApplied runs when the controller accepted req: a member whose
// registration is newer than at the proposal's first send got its place
// from an earlier incarnation.
func (c *Cluster) notePropApplied(b *Broker, inc int, req *kmsg.AlterPartitionRequest, resp *kmsg.AlterPartitionResponse) {
	ok := map[int32]bool{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if p.ErrorCode == 0 {
				ok[p.Partition] = true
			}
		}
	}
	for _, rp := range c.ownProposals(b, req) {
		if !ok[rp.Partition] {
			continue
		}
		epochs := c.proposals[proposalKey{b.id, inc, rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, fmt.Sprint(rp.NewISR)}]
		for _, id := range rp.NewISR {
			o := c.brokers[id-1]
			if id == b.id || !o.up || !o.registered || epochs[id] == o.brokerEpoch {
				continue
			}
			if c.staleProposed[rp.Partition] == nil {
				c.staleProposed[rp.Partition] = map[int32]int64{}
			}
			c.staleProposed[rp.Partition][id] = o.brokerEpoch
			c.staleProposals++
			c.sched.Tracef("p%d: ISR %v applied from leader %d's proposal made before broker %d registered again (broker epoch %d then, %d now)", rp.Partition, rp.NewISR, b.id, id, epochs[id], o.brokerEpoch)
		}
	}
}

// ownProposals are req's changes of the producer topic's partitions.
func (c *Cluster) ownProposals(b *Broker, req *kmsg.AlterPartitionRequest) []kmsg.AlterPartitionRequestTopicPartition {
	var out []kmsg.AlterPartitionRequestTopicPartition
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			p := b.rm.Get(topic, rp.Partition)
			if p != nil && (rt.Topic == topic || rt.TopicID == p.TopicID()) {
				out = append(out, rp)
			}
		}
	}
	return out
}

// proposedStale reports whether b's place in part's ISR came from a
// proposal made before its registration; a stored ISR without b ends it.
func (c *Cluster) proposedStale(b *Broker, part int32, isr []int32) bool {
	e, ok := c.staleProposed[part][b.id]
	if ok && !slices.Contains(isr, b.id) {
		delete(c.staleProposed[part], b.id)
		return false
	}
	return ok && e == b.brokerEpoch
}
