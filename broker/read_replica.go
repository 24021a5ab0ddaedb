package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/config"
	"github.com/brook-mq/brook/replica"
)

// Follower fetching (KIP-392): which replica serves a consumer fetch.

// fromFollowerAllowed reports whether a fetch may be served by a follower:
// consumer fetches from v11 on, the version that brought client.rack
// (Kafka's FetchParams.fetchOnlyLeader is false for them).
func fromFollowerAllowed(req *kmsg.FetchRequest) bool {
	return req.Version >= 11 && fetchReplicaID(req) < 0
}

// hostedPartition finds a local replica, leader or follower, or the error
// code a client should get, as leaderPartition does for leaders.
func (b *Broker) hostedPartition(topic string, partition int32) (*replica.Partition, int16) {
	if _, ok := b.meta.partition(topic, partition); !ok {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	p := b.replicas.Get(topic, partition)
	if p == nil {
		return nil, b.offlineCode(topic, partition, kerr.NotLeaderForPartition.Code)
	}
	return p, 0
}

// readReplicaSelector is replica.selector.class for one fetch: the
// consumer's rack and the racks of the brokers its listener reaches. The
// zero value names no replica (no selector, no client rack, or a fetch
// from a follower or an older client).
type readReplicaSelector struct {
	clientRack string
	racks      map[int32]string
}

// readReplicaSelector builds the selector of a fetch.
func (b *Broker) readReplicaSelector(r *request, req *kmsg.FetchRequest) readReplicaSelector {
	if b.cfg.ReplicaSelectorClass != config.RackAwareReplicaSelector || !fromFollowerAllowed(req) || req.Rack == "" {
		return readReplicaSelector{}
	}
	s := readReplicaSelector{clientRack: req.Rack, racks: map[int32]string{}}
	for _, ep := range b.meta.liveBrokers(r.listener) {
		if ep.rack != nil {
			s.racks[ep.id] = *ep.rack
		}
	}
	return s
}

// preferred is the replica a consumer fetching p at offset should read
// from instead of this leader, or -1 to serve it here.
func (s readReplicaSelector) preferred(p *replica.Partition, offset int64) int32 {
	if s.clientRack == "" {
		return -1
	}
	leader, followers, ok := p.ReadReplicas(offset)
	if !ok {
		return -1
	}
	return replica.SelectRackAware(s.clientRack, func(id int32) (string, bool) {
		rk, ok := s.racks[id]
		return rk, ok
	}, leader, followers)
}
