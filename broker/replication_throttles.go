package broker

// Replication throttles on the leader's side of a follower fetch (KIP-73):
// a replica listed in leader.replication.throttled.replicas that is not in
// the ISR gets no records while the leader's measured rate exceeds
// leader.replication.throttled.rate, and every byte sent for a throttled
// partition counts toward that rate. The follower's side is the fetcher's
// (replica/fetcher_build.go), the leader's decision replica.Manager's
// ReadForFollower (replica/leader_fetch.go); the accounting is replica.Quota.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/replica"
)

// recordLeaderThrottle counts the bytes a follower fetch answer carries
// for throttled partitions, as Kafka's sizeOfThrottledPartitions.
func (b *Broker) recordLeaderThrottle(req *kmsg.FetchRequest, targets []fetchTarget) {
	if fetchReplicaID(req) < 0 {
		return
	}
	q := b.replicas.LeaderQuota()
	var n int64
	for _, t := range targets {
		if t.part == nil {
			continue
		}
		if tp := t.part.TopicPartition(); q.IsThrottled(tp.Topic, tp.Partition) {
			n += int64(t.region.Size)
		}
	}
	q.Record(n)
}

// throttledReplicas gives the replica package a topic's throttle lists.
func (b *Broker) throttledReplicas(topic string) (leader, follower []string) {
	tc := b.topics.resolved(topic)
	return tc.LeaderReplicationThrottledReplicas, tc.FollowerReplicationThrottledReplicas
}

// replicationQuotas builds the leader and follower throttles from the
// broker's config.
func replicationQuotas(leaderRate, followerRate int64, samples int32, window time.Duration) (*replica.Quota, *replica.Quota) {
	qc := replica.QuotaConfig{Samples: int(samples), Window: window}
	l, f := replica.NewQuota(qc), replica.NewQuota(qc)
	l.SetRate(leaderRate)
	f.SetRate(followerRate)
	return l, f
}
