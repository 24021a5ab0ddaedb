package broker

// DeleteRecords, key 21, versions 0-2.
//
// Moves a partition's log start offset up to the given offset (-1: the
// high watermark), after which the records below it are gone for readers
// and their segments are deleted. An offset above the high watermark, or
// negative other than -1, is OFFSET_OUT_OF_RANGE. The answer's
// low_watermark is the new log start offset.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const deleteToHighWatermark = -1

func (b *Broker) handleDeleteRecords(_ context.Context, _ *request, req *kmsg.DeleteRecordsRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			part, code := b.leaderPartition(rt.Topic, rp.Partition)
			if code == 0 {
				offset := rp.Offset
				hw := part.HighWatermark()
				if offset == deleteToHighWatermark {
					offset = hw
				}
				if offset < 0 || offset > hw {
					code = kerr.OffsetOutOfRange.Code
				} else if low, err := part.Log().DeleteRecordsBefore(offset); err != nil {
					code = appendErrorCode(err)
				} else {
					sp.LowWatermark = low
				}
			}
			sp.ErrorCode = code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return respond(resp)
}
