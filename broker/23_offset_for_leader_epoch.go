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
// (NOT_LEADER_OR_FOLLOWER otherwise, after the epoch check, as Kafka). Each partition is answered by
// replica.AnswerEpochs (replica/leader_epoch.go), which the simulation
// runs too; what is the broker's here is the metadata and authorization.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/replica"
)

func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, r *request, req *kmsg.OffsetForLeaderEpochRequest) (reply, error) {
	// A replica needs CLUSTER_ACTION, a consumer DESCRIBE on each topic.
	fromReplica := req.Version >= 3 && req.ReplicaID >= 0
	replicaOK := fromReplica && b.authorizeCluster(r, auth.OpClusterAction)
	resp := replica.AnswerEpochs(req, func(topic string, partition int32) (*replica.Partition, int16) {
		part, code := b.hostedPartition(topic, partition)
		switch {
		case fromReplica && !replicaOK:
			code = kerr.ClusterAuthorizationFailed.Code
		case !fromReplica && !b.authorize(r, auth.OpDescribe, auth.ResourceTopic, topic):
			code = kerr.TopicAuthorizationFailed.Code
		}
		return part, code
	})
	return respond(resp)
}
