package replica

// The leader's answer to an OffsetForLeaderEpoch, apart from the broker's
// request handling (metadata, authorization, the response's encoding):
// each partition's current_leader_epoch checked against the leader's, and
// where the requested epoch ends in the leader's log (its epoch cache).
// The broker's handler (broker/23_offset_for_leader_epoch.go) calls it
// with its lookup of the partitions it leads; the deterministic simulation
// (sim/) calls it for the followers' queries it carries, so both answer
// with the same code, as ReadForFollower does for Fetch.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AnswerEpochs answers req on its leader. hosted finds a partition this
// broker hosts, as leader or follower, or the error code to answer the
// partition with (an unknown topic, one not hosted here, a failed
// authorization). A partition found is answered FENCED_LEADER_EPOCH or
// UNKNOWN_LEADER_EPOCH when the request's current_leader_epoch is not the
// partition's, then NOT_LEADER_OR_FOLLOWER unless this broker leads it, in
// that order, as Kafka's Partition.getLocalLog checks a follower's epoch
// too; else with the largest epoch at or below the requested one and the
// offset where the next epoch starts (Log.EndOffsetForEpoch); any error
// answers -1, -1 (UNDEFINED).
func AnswerEpochs(req *kmsg.OffsetForLeaderEpochRequest, hosted func(topic string, partition int32) (*Partition, int16)) *kmsg.OffsetForLeaderEpochResponse {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LeaderEpoch, sp.EndOffset = -1, -1
			part, code := hosted(rt.Topic, rp.Partition)
			if code == 0 {
				code = EpochErrorCode(part.CheckLeaderEpoch(rp.CurrentLeaderEpoch))
			}
			if code == 0 && !part.IsLeader() {
				code = kerr.NotLeaderForPartition.Code
			}
			if code == 0 {
				sp.LeaderEpoch, sp.EndOffset = part.Log().EndOffsetForEpoch(rp.LeaderEpoch)
			}
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
