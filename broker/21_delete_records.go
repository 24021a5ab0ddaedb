package broker

// DeleteRecords, key 21, versions 0-2.
//
// Moves a partition's log start offset up to the given offset (-1: the
// high watermark), after which the records below it are gone for readers
// and their segments are deleted. An offset above the high watermark, or
// negative other than -1, is OFFSET_OUT_OF_RANGE. As Kafka's
// DelayedDeleteRecords, the answer waits until the low watermark (the
// least log start offset over the replicas on live brokers, which
// followers report in their fetches) reaches the offset, so that the
// records stay deleted after a failover; REQUEST_TIMED_OUT after
// timeout_ms, NOT_LEADER_OR_FOLLOWER if the leadership moves meanwhile.
// The answer's low_watermark is that low watermark.

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/replica"
)

const deleteToHighWatermark = -1

// lowWatermarkWait is one partition whose answer waits for its followers.
type lowWatermarkWait struct {
	part             *replica.Partition
	topic, partition int
	offset           int64
}

func (b *Broker) handleDeleteRecords(ctx context.Context, r *request, req *kmsg.DeleteRecordsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	var waits []lowWatermarkWait
	for i, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for j, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			part, code := b.leaderPartition(rt.Topic, rp.Partition)
			if !b.authorize(r, auth.OpDelete, auth.ResourceTopic, rt.Topic) {
				code = kerr.TopicAuthorizationFailed.Code
			}
			if code == 0 {
				offset := rp.Offset
				hw := part.HighWatermark()
				if offset == deleteToHighWatermark {
					offset = hw
				}
				if offset < 0 || offset > hw {
					code = kerr.OffsetOutOfRange.Code
				} else if _, err := part.Log().DeleteRecordsBefore(offset); err != nil {
					code = appendErrorCode(err)
				} else if low, err := part.LowWatermark(b.meta.isLive); err != nil {
					code = appendErrorCode(err)
				} else if low >= offset {
					sp.LowWatermark = low
				} else {
					waits = append(waits, lowWatermarkWait{part, i, j, offset})
				}
			}
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(waits) == 0 {
		return respond(resp)
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	return reply{wait: func() kmsg.Response {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for _, w := range waits {
			sp := &resp.Topics[w.topic].Partitions[w.partition]
			low, err := w.part.WaitForLowWatermark(wctx, w.offset, b.meta.isLive)
			switch {
			case err == nil:
				sp.LowWatermark = low
			case errors.Is(err, replica.ErrNotLeader):
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				sp.ErrorCode = kerr.RequestTimedOut.Code
			}
		}
		return resp
	}}, nil
}
