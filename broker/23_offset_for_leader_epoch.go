package broker

// OffsetForLeaderEpoch, key 23, versions 0-4.
//
// Followers (and consumers detecting truncation, KIP-320) ask where a
// leader epoch ends on the leader: the answer is the largest epoch at or
// below the requested one and the offset where the next epoch starts (the
// log end offset for the latest epoch, which a new leader records on
// election, so that its own epoch is known before it writes); an epoch
// later than any in the log is answered with -1, -1 (UNDEFINED). v1 adds the epoch to the answer, v2
// current_leader_epoch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH), v3
// replica_id, v4 is flexible. Only the leader answers
// (NOT_LEADER_OR_FOLLOWER otherwise).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/replica"
)

func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, r *request, req *kmsg.OffsetForLeaderEpochRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	// A replica needs CLUSTER_ACTION, a consumer DESCRIBE on each topic.
	fromReplica := req.Version >= 3 && req.ReplicaID >= 0
	replicaOK := fromReplica && b.authorizeCluster(r, auth.OpClusterAction)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			part, code := b.leaderPartition(rt.Topic, rp.Partition)
			switch {
			case fromReplica && !replicaOK:
				code = kerr.ClusterAuthorizationFailed.Code
			case !fromReplica && !b.authorize(r, auth.OpDescribe, auth.ResourceTopic, rt.Topic):
				code = kerr.TopicAuthorizationFailed.Code
			}
			if code == 0 {
				code = replica.EpochErrorCode(part.CheckLeaderEpoch(rp.CurrentLeaderEpoch))
			}
			if code == 0 {
				sp.LeaderEpoch, sp.EndOffset = part.Log().EndOffsetForEpoch(rp.LeaderEpoch)
			}
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return respond(resp)
}
