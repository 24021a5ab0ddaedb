package broker

// WriteTxnMarkers, key 27, versions 0-2 (v1 is flexible; v2 carries the
// coordinator's transaction_version: at 2 the marker's epoch was bumped
// past the transaction's and must be above the producer's epoch at the
// leader, see log.TxnMarker).
//
// The transaction coordinator sends it to partition leaders to end a
// transaction: for each marker, each named partition gets a COMMIT or
// ABORT control batch of the producer, as Kafka's handler appends it:
// with acks=all (requiredAcks -1) as the coordinator's origin, then
// answered once the high watermark passed it. A partition this broker does
// not host is UNKNOWN_TOPIC_OR_PARTITION; one it hosts but does not lead
// NOT_LEADER_OR_FOLLOWER; an older producer epoch INVALID_PRODUCER_EPOCH;
// an older coordinator epoch than the partition has seen
// TRANSACTION_COORDINATOR_FENCED. Once a marker is committed on a
// __consumer_offsets partition, the group coordinator materialises or
// drops the producer's pending transactional offsets.

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/replica"
)

// txnMarkerTimeout bounds the acks=all wait of a marker: Kafka uses
// request.timeout.ms, whose default this is.
const txnMarkerTimeout = 30 * time.Second

// txnOffsetsCompleter is the group coordinator's side of a marker written
// to a __consumer_offsets partition: commit makes the producer's pending
// transactional offsets for that partition's groups visible, abort drops
// them (Kafka's GroupCoordinator.onTransactionCompleted).
type txnOffsetsCompleter interface {
	OnTxnMarker(partition int32, producerID int64, commit bool)
}

// markerWait is one appended marker waiting for the high watermark.
type markerWait struct {
	part      *replica.Partition
	resp      *kmsg.WriteTxnMarkersResponseMarkerTopicPartition
	end       int64
	term      int32
	minISR    int
	offsets   bool // a __consumer_offsets partition
	partition int32
	marker    log.TxnMarker
}

func (b *Broker) handleWriteTxnMarkers(ctx context.Context, r *request, req *kmsg.WriteTxnMarkersRequest) (reply, error) {
	if resp, refused := b.refuse(r, req); refused {
		return respond(resp)
	}
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	var waits []markerWait
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		marker := log.TxnMarker{
			ProducerID: m.ProducerID, ProducerEpoch: m.ProducerEpoch, CoordinatorEpoch: m.CoordinatorEpoch,
			Commit: m.Committed, TransactionVersion: m.TransactionVersion,
		}
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			for i, p := range t.Partitions {
				rp := &rt.Partitions[i]
				*rp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				w, code := b.writeTxnMarker(t.Topic, p, marker)
				rp.ErrorCode = code
				if w != nil {
					w.resp = rp
					waits = append(waits, *w)
				}
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	if len(waits) == 0 {
		return respond(resp)
	}
	return reply{wait: func() kmsg.Response {
		wctx, cancel := context.WithTimeout(ctx, txnMarkerTimeout)
		defer cancel()
		for _, w := range waits {
			if err := w.part.WaitForCommit(wctx, w.end, w.term, w.minISR); err != nil {
				w.resp.ErrorCode = commitWaitErrorCode(err)
				continue
			}
			if c := b.txnOffsetsCompleter(); w.offsets && c != nil {
				c.OnTxnMarker(w.partition, w.marker.ProducerID, w.marker.Commit)
			}
		}
		return resp
	}}, nil
}

// SendTxnMarkers delivers WriteTxnMarkers to the leader brokerID for the
// transaction coordinator: to this broker in-process, through the same
// handler as a request from the wire (waiting for the markers' commit),
// and to the others over the inter-broker listener, on a connection of its
// own as Kafka's marker channel has.
func (b *Broker) SendTxnMarkers(ctx context.Context, brokerID int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	if brokerID != b.cfg.BrokerID {
		resp, err := b.peers.Request(ctx, brokerID, "txn-markers", req)
		if err != nil {
			return nil, fmt.Errorf("write transaction markers on broker %d: %w", brokerID, err)
		}
		return resp.(*kmsg.WriteTxnMarkersResponse), nil
	}
	req.SetVersion(b.handlers[req.Key()].max)
	r, err := b.handleWriteTxnMarkers(ctx, nil, req)
	if err != nil {
		return nil, err
	}
	if r.wait != nil {
		return r.wait().(*kmsg.WriteTxnMarkersResponse), nil
	}
	return r.resp.(*kmsg.WriteTxnMarkersResponse), nil
}

// writeTxnMarker appends one marker as leader, returning what to wait for
// or the partition's error code.
func (b *Broker) writeTxnMarker(topic string, partition int32, m log.TxnMarker) (*markerWait, int16) {
	p := b.replicas.Get(topic, partition)
	if p == nil {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	minISR := int(b.topicConfig(topic).MinInSyncReplicas)
	info, term, err := p.AppendTxnMarkerAsLeader(m, minISR)
	if err != nil {
		b.logger.Debug("write transaction marker", "topic", topic, "partition", partition, "producer_id", m.ProducerID, "err", err)
		return nil, appendErrorCode(err)
	}
	return &markerWait{
		part: p, end: info.LastOffset + 1, term: term, minISR: minISR,
		offsets: topic == consumerOffsetsTopic, partition: partition, marker: m,
	}, 0
}

// txnOffsetsCompleter returns the group side's hook for markers on
// __consumer_offsets, nil while the group coordinator has none: the
// broker's own override (tests), else the coordinator itself once it
// implements txnOffsetsCompleter.
func (b *Broker) txnOffsetsCompleter() txnOffsetsCompleter {
	if b.txnOffsets != nil {
		return b.txnOffsets
	}
	if b.groups == nil {
		return nil
	}
	if c, ok := any(b.groups).(txnOffsetsCompleter); ok {
		return c
	}
	return nil
}
