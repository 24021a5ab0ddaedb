package broker

// ListOffsets, key 2, versions 1-9.
//
// A timestamp of -1 asks for the latest offset, which is the high
// watermark (read_uncommitted) or the last stable offset (read_committed,
// v2+), never the log end offset; -2 the earliest (log start offset); -3
// the record with the largest timestamp (v7+); -4 the earliest local offset
// (v8+, the log start offset since Brook has no tiered storage); -5 the
// latest tiered offset (v9+, which Kafka 3.9's replica fetcher sends):
// offset -1 and leader epoch -1 without tiered storage, as Kafka. Any other
// timestamp finds the first offset whose timestamp is at least it, through
// the time index, ignoring offsets at or above the bound; none found gives
// offset -1. v4 adds current_leader_epoch and the leader epoch in the answer.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/replica"
)

const (
	listLatest        = -1
	listEarliest      = -2
	listMaxTimestamp  = -3
	listEarliestLocal = -4
	listLatestTiered  = -5
)

func (b *Broker) handleListOffsets(_ context.Context, r *request, req *kmsg.ListOffsetsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		described := b.authorize(r, auth.OpDescribe, auth.ResourceTopic, rt.Topic)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			if described {
				sp.ErrorCode = b.listOffset(req, rt.Topic, rp, &sp)
			}
			if sp.ErrorCode != 0 {
				sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return respond(resp)
}

func (b *Broker) listOffset(req *kmsg.ListOffsetsRequest, topic string, rp kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) int16 {
	part, code := b.leaderPartition(topic, rp.Partition)
	if code != 0 {
		return code
	}
	if code := replica.EpochErrorCode(part.CheckLeaderEpoch(rp.CurrentLeaderEpoch)); code != 0 {
		return code
	}
	l := part.Log()
	bound := part.HighWatermark()
	if req.IsolationLevel == readCommitted {
		bound = part.LastStableOffset()
	}
	sp.LeaderEpoch = part.State().LeaderEpoch
	switch rp.Timestamp {
	case listLatest:
		sp.Offset = bound
	case listEarliest, listEarliestLocal:
		sp.Offset = l.LogStartOffset()
	case listLatestTiered:
		sp.LeaderEpoch = -1
	case listMaxTimestamp:
		if req.Version < 7 {
			return kerr.UnsupportedVersion.Code
		}
		ts, offset := l.MaxTimestamp()
		if offset >= 0 && offset < bound {
			sp.Timestamp, sp.Offset = ts, offset
		}
	default:
		if rp.Timestamp < 0 {
			return kerr.InvalidRequest.Code
		}
		offset, ts, found, err := l.OffsetForTimestamp(rp.Timestamp, bound)
		if err != nil {
			return appendErrorCode(err)
		}
		if found {
			sp.Timestamp, sp.Offset = ts, offset
		} else {
			sp.LeaderEpoch = -1
		}
	}
	return 0
}
