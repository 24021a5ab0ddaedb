package broker

// The one hand-written encoder in Brook: a Fetch response whose record sets
// stay in the segment files, so that the writer can send them with
// sendfile(2) instead of copying them through Go. It writes exactly what
// kmsg's FetchResponse.AppendTo writes for the same response with the
// records inline (a property test checks this byte for byte, for every
// served version), except that each partition's records are a file region.
//
// Layout, versions 4-17 (v12+ is flexible: compact arrays, strings and
// bytes as uvarint length+1, and a tagged-field section after each struct,
// always empty here):
//
//	throttle_time_ms int32
//	error_code       int16   v7+
//	session_id       int32   v7+
//	topics           array
//	  topic          string  v4-12 | topic_id uuid v13+
//	  partitions     array
//	    partition_index, error_code, high_watermark, last_stable_offset,
//	    log_start_offset (v5+), aborted_transactions (nullable array),
//	    preferred_read_replica (v11+), records (nullable bytes),
//	    diverging_epoch (v12+, tag 0, when set)

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
)

// fetchChunk is a piece of an encoded fetch response: bytes, or a file
// region to splice in after them.
type fetchChunk struct {
	bytes  []byte
	region log.Slice
}

// fetchEncoder builds the chunks of one fetch response.
type fetchEncoder struct {
	flexible bool
	chunks   []fetchChunk
	buf      []byte
}

// encodeFetch encodes resp (without the response header). regions[t][p],
// when its Size is positive, replaces the RecordBatches of topic t's
// partition p.
func encodeFetch(dst []byte, resp *kmsg.FetchResponse, regions [][]log.Slice) []fetchChunk {
	e := &fetchEncoder{flexible: resp.Version >= 12, buf: dst}
	v := resp.Version
	e.int32(resp.ThrottleMillis)
	if v >= 7 {
		e.int16(resp.ErrorCode)
		e.int32(resp.SessionID)
	}
	e.arrayLen(len(resp.Topics))
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		if v >= 13 {
			e.buf = append(e.buf, t.TopicID[:]...)
		} else {
			e.string(t.Topic)
		}
		e.arrayLen(len(t.Partitions))
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			e.int32(p.Partition)
			e.int16(p.ErrorCode)
			e.int64(p.HighWatermark)
			e.int64(p.LastStableOffset)
			if v >= 5 {
				e.int64(p.LogStartOffset)
			}
			e.abortedTransactions(p.AbortedTransactions)
			if v >= 11 {
				e.int32(p.PreferredReadReplica)
			}
			var region log.Slice
			if ti < len(regions) && pi < len(regions[ti]) {
				region = regions[ti][pi]
			}
			if region.Size > 0 {
				e.bytesLen(int(region.Size), false)
				e.chunks = append(e.chunks, fetchChunk{bytes: e.buf, region: region})
				e.buf = e.buf[len(e.buf):]
			} else {
				e.bytesLen(len(p.RecordBatches), p.RecordBatches == nil)
				e.buf = append(e.buf, p.RecordBatches...)
			}
			e.partitionTags(p)
		}
		e.tags()
	}
	e.tags()
	if len(e.buf) > 0 {
		e.chunks = append(e.chunks, fetchChunk{bytes: e.buf})
	}
	return e.chunks
}

func (e *fetchEncoder) int16(v int16) { e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(v)) }
func (e *fetchEncoder) int32(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }
func (e *fetchEncoder) int64(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

// arrayLen writes a non-null array length.
func (e *fetchEncoder) arrayLen(n int) {
	if e.flexible {
		e.buf = binary.AppendUvarint(e.buf, uint64(n)+1)
	} else {
		e.int32(int32(n))
	}
}

func (e *fetchEncoder) string(s string) {
	if e.flexible {
		e.buf = binary.AppendUvarint(e.buf, uint64(len(s))+1)
	} else {
		e.int16(int16(len(s)))
	}
	e.buf = append(e.buf, s...)
}

// bytesLen writes the length of nullable bytes.
func (e *fetchEncoder) bytesLen(n int, null bool) {
	switch {
	case e.flexible && null:
		e.buf = append(e.buf, 0)
	case e.flexible:
		e.buf = binary.AppendUvarint(e.buf, uint64(n)+1)
	case null:
		e.int32(-1)
	default:
		e.int32(int32(n))
	}
}

func (e *fetchEncoder) abortedTransactions(a []kmsg.FetchResponseTopicPartitionAbortedTransaction) {
	switch {
	case a == nil && e.flexible:
		e.buf = append(e.buf, 0)
	case a == nil:
		e.int32(-1)
	default:
		e.arrayLen(len(a))
	}
	for _, t := range a {
		e.int64(t.ProducerID)
		e.int64(t.FirstOffset)
		e.tags()
	}
}

// tags writes an empty tagged-field section (flexible versions only).
func (e *fetchEncoder) tags() {
	if e.flexible {
		e.buf = append(e.buf, 0)
	}
}

// partitionTags writes a partition's tagged fields: diverging_epoch (tag
// 0) when set, the only one Brook sends (a fetcher whose log diverged,
// replica/diverging.go).
func (e *fetchEncoder) partitionTags(p *kmsg.FetchResponseTopicPartition) {
	d := p.DivergingEpoch
	if !e.flexible || d.Epoch == -1 && d.EndOffset == -1 {
		e.tags()
		return
	}
	// One field: tag 0, its size (epoch, end offset, its own empty
	// tagged fields), then the struct.
	e.buf = append(e.buf, 1, 0, 4+8+1)
	e.int32(d.Epoch)
	e.int64(d.EndOffset)
	e.tags()
}
