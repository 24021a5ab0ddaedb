package broker

// Produce, key 0, versions 0-13.
//
// v0-2 carry a legacy message set (magic 0, or magic 1 from v2), which is
// converted to one v2 batch before anything else looks at it, as Kafka's
// LogValidator does; v1 adds throttle_time_ms, v2 log_append_time. Kafka
// 4.0 dropped v0-2 but still advertises v0 for librdkafka's sake.
// v3+ carries exactly one magic-v2 batch per partition (INVALID_RECORD
// otherwise, checked by protocol/batch) and a transactional id; v5 adds
// log_start_offset, v7 allows zstd, v8 error messages and record_errors
// (the failing records of a batch rejected record by record), v9 is
// flexible, v12 is transaction version 2: a transactional batch adds its
// partition to the producer's transaction (transactions_implicit.go), v13
// addresses topics by id (unknown ids: UNKNOWN_TOPIC_ID).
//
// acks=0 gets no response; when any partition failed, the connection is
// closed instead, the only way such a producer can notice. acks=all
// appends first (after checking the ISR against min.insync.replicas), then
// waits off the connection loop for the high watermark, up to timeout_ms
// (REQUEST_TIMED_OUT).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/protocol/batch"
	"github.com/brook-mq/brook/replica"
	"github.com/brook-mq/brook/txn"
)

// committedWait is one appended partition an acks=all produce waits for.
type committedWait struct {
	part *replica.Partition
	resp *kmsg.ProduceResponseTopicPartition
	end  int64 // offset after the batch's last record
	// term and minISR: the wait fails if leadership was lost since the
	// append, and ends NOT_ENOUGH_REPLICAS_AFTER_APPEND on a shrunk ISR.
	term   int32
	minISR int
}

func (b *Broker) handleProduce(ctx context.Context, r *request, req *kmsg.ProduceRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	acksValid := req.Acks == 0 || req.Acks == 1 || req.Acks == -1
	var waits []committedWait
	failed := false
	txnWithoutID := req.TransactionID == nil && hasTransactionalRecords(req)
	txnDenied := req.TransactionID != nil && hasTransactionalRecords(req) &&
		!b.authorize(r, auth.OpWrite, auth.ResourceTransactionalID, *req.TransactionID)
	var txnAdds map[txn.TopicPartition]int16
	if acksValid && !txnWithoutID && !txnDenied {
		txnAdds = b.produceTxnAdds(ctx, r, req)
	}
	for _, rt := range req.Topics {
		topic, topicErr := b.produceTopic(req.Version, rt)
		if name := cmp.Or(topic, rt.Topic); name != "" && !b.authorize(r, auth.OpWrite, auth.ResourceTopic, name) {
			topic, topicErr = "", kerr.TopicAuthorizationFailed.Code
		}
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for i, rp := range rt.Partitions {
			sp := &st.Partitions[i]
			*sp = kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			var code int16
			var err error
			switch {
			case !acksValid:
				code = kerr.InvalidRequiredAcks.Code
			case txnWithoutID:
				code, err = kerr.TransactionalIDAuthorizationFailed.Code, errTransactionalWithoutID
			case txnDenied:
				code = kerr.TransactionalIDAuthorizationFailed.Code
			case topicErr != 0:
				code = topicErr
			case txnAdds[txn.TopicPartition{Topic: topic, Partition: rp.Partition}] != 0:
				code = txnAdds[txn.TopicPartition{Topic: topic, Partition: rp.Partition}]
			default:
				var w *committedWait
				w, code, err = b.produceToPartition(req.Version, topic, rp, req.Acks, sp)
				if w != nil {
					waits = append(waits, *w)
				}
				// As Kafka, a partition this broker does not lead is not
				// a failed produce, and counting it would make counters
				// for names that are no topic.
				if code != 0 && code != kerr.UnknownTopicOrPartition.Code && code != kerr.NotLeaderForPartition.Code {
					b.metrics.Topics.ProduceFailed(topic)
				}
			}
			if code != 0 {
				failed = true
				setProduceError(sp, req.Version, code, err)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	throttle := b.recordProduce(r, req)
	resp.ThrottleMillis = throttleMillis(throttle)
	if req.Acks == 0 {
		return reply{none: true, closeConn: failed, throttle: throttle}, nil
	}
	if len(waits) == 0 {
		return reply{resp: resp, throttle: throttle}, nil
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	return reply{wait: func() kmsg.Response {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		for _, w := range waits {
			if err := w.part.WaitForCommit(wctx, w.end, w.term, w.minISR); err != nil {
				w.resp.ErrorCode = commitWaitErrorCode(err)
				w.resp.BaseOffset, w.resp.LogAppendTime, w.resp.LogStartOffset = -1, -1, -1
			}
		}
		return resp
	}, throttle: throttle}, nil
}

// setProduceError fills a failed partition's error. Produce v8+ also
// carries the message and, for a batch rejected record by record, the index
// and message of each failing record (KIP-467), as Kafka's
// RecordValidationException: clients then fail only those records.
func setProduceError(sp *kmsg.ProduceResponseTopicPartition, version, code int16, err error) {
	sp.ErrorCode = code
	if err == nil || version < 8 {
		return
	}
	msg := err.Error()
	sp.ErrorMessage = &msg
	var recErrs *batch.RecordErrors
	if !errors.As(err, &recErrs) {
		return
	}
	sp.ErrorRecords = make([]kmsg.ProduceResponseTopicPartitionErrorRecord, len(recErrs.Records))
	for i := range recErrs.Records {
		re := &sp.ErrorRecords[i]
		*re = kmsg.NewProduceResponseTopicPartitionErrorRecord()
		re.RelativeOffset = recErrs.Records[i].BatchIndex
		re.ErrorMessage = &recErrs.Records[i].Message
	}
}

var errTransactionalWithoutID = errors.New("transactional records need a transactional id")

// hasTransactionalRecords reports whether any partition's records are a
// v2 batch with the transactional attribute: as in Kafka, such a request
// needs a transactional id, else every partition of it fails with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing is appended.
func hasTransactionalRecords(req *kmsg.ProduceRequest) bool {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if h, err := batch.ParseHeader(rp.Records); err == nil && h.Magic == batch.MagicV2 && h.Transactional() {
				return true
			}
		}
	}
	return false
}

// produceTopic resolves a produce request's topic (by id from v13) and
// returns its name, or the error code that every partition of it gets.
func (b *Broker) produceTopic(version int16, rt kmsg.ProduceRequestTopic) (string, int16) {
	name := rt.Topic
	if version >= 13 {
		var ok bool
		if name, ok = b.meta.topicName(rt.TopicID); !ok {
			return "", kerr.UnknownTopicID.Code
		}
	}
	if isInternalTopic(name) {
		return "", kerr.InvalidTopicException.Code
	}
	return name, 0
}

// produceToPartition appends one partition's batch as leader and fills sp.
// With acks=all it returns what to wait for.
func (b *Broker) produceToPartition(version int16, topic string, rp kmsg.ProduceRequestTopicPartition, acks int16, sp *kmsg.ProduceResponseTopicPartition) (*committedWait, int16, error) {
	part, code := b.leaderPartition(topic, rp.Partition)
	if code != 0 {
		return nil, code, nil
	}
	tc := b.topicConfig(topic)
	records, err := b.prepareBatch(version, rp.Records, tc.CompressionType)
	if err != nil {
		return nil, appendErrorCode(err), err
	}
	minISR := int(tc.MinInSyncReplicas)
	info, term, err := part.AppendAsLeaderInTerm(records, acks, minISR)
	if err != nil {
		return nil, appendErrorCode(err), err
	}
	messages := int(info.RecordCount)
	if info.Duplicate {
		messages = 0
	}
	b.metrics.Topics.Produced(topic, len(rp.Records), messages)
	sp.BaseOffset = info.FirstOffset
	sp.LogAppendTime = info.LogAppendTime
	sp.LogStartOffset = info.LogStartOffset
	if acks != -1 {
		return nil, 0, nil
	}
	return &committedWait{part: part, resp: sp, end: info.LastOffset + 1, term: term, minISR: minISR}, 0, nil
}

// topicCodec maps compression.type to the codec Kafka stores batches with;
// "producer" keeps the producer's (ok false).
func topicCodec(compressionType string) (c batch.Compression, ok bool) {
	switch compressionType {
	case "uncompressed":
		return batch.None, true
	case "gzip":
		return batch.Gzip, true
	case "snappy":
		return batch.Snappy, true
	case "lz4":
		return batch.LZ4, true
	case "zstd":
		return batch.Zstd, true
	}
	return 0, false
}

// prepareBatch applies the produce-level rules the log does not know:
// a v0-2 message set becomes a v2 batch, zstd needs Produce v7+, and a topic whose compression.type names a codec
// stores every batch with that codec, re-encoding the ones that differ (the
// only case in which the broker touches the records, as in Kafka). The CRC
// is checked before re-encoding, since re-encoding writes a new one.
func (b *Broker) prepareBatch(version int16, records []byte, compressionType string) ([]byte, error) {
	if version < 3 && batch.IsLegacy(records) {
		// Kafka does not hold v0-2 to their magic: a v2 batch passes too.
		var err error
		if records, err = batch.ConvertLegacy(records, b.codecs, 0); err != nil {
			return nil, err
		}
	}
	h, err := batch.ParseHeader(records)
	if err != nil {
		return nil, err // the log's validation names the exact fault
	}
	if h.Compression() == batch.Zstd && version < 7 {
		return nil, fmt.Errorf("%w: zstd needs Produce v7 or later, got v%d", batch.ErrUnsupportedCompression, version)
	}
	to, convert := topicCodec(compressionType)
	if !convert || to == h.Compression() {
		return records, nil
	}
	if err := batch.CheckCRC(records, &h); err != nil {
		return nil, err
	}
	return batch.Recompress(records, to, b.codecs)
}

// leaderPartition finds the local leader of a partition, or the error code
// a client should get: UNKNOWN_TOPIC_OR_PARTITION when the cluster does not
// have it, NOT_LEADER_OR_FOLLOWER when another broker leads it.
func (b *Broker) leaderPartition(topic string, partition int32) (*replica.Partition, int16) {
	if _, ok := b.meta.partition(topic, partition); !ok {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	p := b.replicas.Get(topic, partition)
	if p == nil || !p.IsLeader() {
		return nil, b.offlineCode(topic, partition, kerr.NotLeaderForPartition.Code)
	}
	return p, 0
}
