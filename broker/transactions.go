package broker

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/replica"
	"github.com/brook-mq/brook/txn"
)

// ensureTransactionStateTopic creates __transaction_state if it does not
// exist yet, with Kafka's settings for it: compacted,
// transaction.state.log.num.partitions partitions of
// transaction.state.log.segment.bytes segments, min.insync.replicas from
// transaction.state.log.min.isr. Single-node mode creates it with one
// replica, as it does __consumer_offsets.
func (b *Broker) ensureTransactionStateTopic(ctx context.Context) {
	rf, minISR := b.cfg.TransactionStateLogReplicationFactor, b.cfg.TransactionStateLogMinISR
	if b.cfg.ZookeeperConnect == "" {
		rf, minISR = 1, 1
	}
	res := b.createTopics(ctx, []controller.TopicSpec{{
		Name:              transactionStateTopic,
		NumPartitions:     b.cfg.TransactionStateLogNumPartitions,
		ReplicationFactor: rf,
		Configs: map[string]string{
			"cleanup.policy":                 "compact",
			"compression.type":               "uncompressed",
			"min.insync.replicas":            strconv.Itoa(int(minISR)),
			"segment.bytes":                  strconv.Itoa(int(b.cfg.TransactionStateLogSegmentBytes)),
			"unclean.leader.election.enable": "false",
		},
	}}, false)
	if code := res[0].ErrorCode; code != 0 && code != kerr.TopicAlreadyExists.Code {
		b.logger.Warn("create transaction state topic", "code", code, "msg", res[0].ErrorMessage)
	}
}

// txnStatePartition is a led __transaction_state partition as the
// transaction coordinator sees it: read to the log end like an offsets
// partition, but appended with acks=all whatever
// offsets.commit.required.acks says, as Kafka's TransactionStateManager
// does.
type txnStatePartition struct {
	offsetsPartition
}

func (t txnStatePartition) Append(ctx context.Context, b []byte) (int64, error) {
	minISR := int(t.b.topicConfig(transactionStateTopic).MinInSyncReplicas)
	info, term, err := t.p.AppendAsLeaderInTerm(b, -1, minISR)
	if err != nil {
		return -1, fmt.Errorf("append to %s: %w", t.p.TopicPartition(), t.kafkaError(err))
	}
	if err := t.p.WaitForCommit(ctx, info.LastOffset+1, term, minISR); err != nil {
		return -1, fmt.Errorf("commit on %s: %w", t.p.TopicPartition(), t.kafkaError(err))
	}
	return info.FirstOffset, nil
}

func (b *Broker) onTxnStateLeader(p *replica.Partition, epoch int32) {
	b.txns.OnElected(p.TopicPartition().Partition, epoch, txnStatePartition{offsetsPartition{p: p, b: b}})
}

// markerSender sends WriteTxnMarkers for the transaction coordinator: to
// this broker's own handler in process, to others over the inter-broker
// client, one request per leader.
type markerSender struct{ b *Broker }

// writeTxnMarkersVersion is the version the coordinator sends: v2 carries
// the transaction version of the markers.
const writeTxnMarkersVersion = 2

func (s markerSender) WriteMarkers(ctx context.Context, job txn.MarkerJob) map[txn.TopicPartition]int16 {
	out := make(map[txn.TopicPartition]int16, len(job.Partitions))
	byLeader := map[int32][]txn.TopicPartition{}
	for _, tp := range job.Partitions {
		ps, ok := s.b.meta.partition(tp.Topic, tp.Partition)
		switch {
		case !ok:
			if _, exists := s.b.meta.topic(tp.Topic); !exists {
				// Kafka drops the partitions of deleted topics from the
				// transaction: there is nothing left to mark.
				out[tp] = 0
			}
		case ps.Leader < 0:
			// No leader now: retried.
		default:
			byLeader[ps.Leader] = append(byLeader[ps.Leader], tp)
		}
	}
	for leader, tps := range byLeader {
		resp, err := s.send(ctx, leader, markersRequest(job, tps))
		if err != nil {
			s.b.logger.Debug("write txn markers", "leader", leader, "transactional_id", job.TransactionalID, "err", err)
			continue
		}
		for _, m := range resp.Markers {
			if m.ProducerID != job.ProducerID {
				continue
			}
			for _, t := range m.Topics {
				for _, p := range t.Partitions {
					out[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
				}
			}
		}
	}
	return out
}

func markersRequest(job txn.MarkerJob, tps []txn.TopicPartition) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = writeTxnMarkersVersion
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = job.ProducerID, job.ProducerEpoch, job.Commit, job.CoordinatorEpoch
	m.TransactionVersion = job.TransactionVersion
	eachTopic(tps, func(topic string, partitions []int32) {
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = topic, partitions
		m.Topics = append(m.Topics, t)
	})
	req.Markers = append(req.Markers, m)
	return req
}

// eachTopic calls fn for each run of one topic in tps (sorted by topic),
// with that topic's partitions: how requests group partitions.
func eachTopic(tps []txn.TopicPartition, fn func(topic string, partitions []int32)) {
	for i := 0; i < len(tps); {
		topic := tps[i].Topic
		var partitions []int32
		for ; i < len(tps) && tps[i].Topic == topic; i++ {
			partitions = append(partitions, tps[i].Partition)
		}
		fn(topic, partitions)
	}
}

// send runs the request through this broker's own WriteTxnMarkers handler
// when it leads the partitions, and over the inter-broker listener
// otherwise.
func (s markerSender) send(ctx context.Context, leader int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	if leader != s.b.cfg.BrokerID {
		resp, err := s.b.peers.Request(ctx, leader, "txnmarkers", req)
		if err != nil {
			return nil, err
		}
		return resp.(*kmsg.WriteTxnMarkersResponse), nil
	}
	h, ok := s.b.handlers[req.Key()]
	if !ok {
		return nil, fmt.Errorf("broker: WriteTxnMarkers is not served")
	}
	rep, err := h.fn(ctx, &request{clientID: "txn-coordinator"}, req)
	if err != nil {
		return nil, err
	}
	resp := rep.resp
	if rep.wait != nil {
		resp = rep.wait()
	}
	wr, ok := resp.(*kmsg.WriteTxnMarkersResponse)
	if !ok {
		return nil, fmt.Errorf("broker: WriteTxnMarkers answered %T", resp)
	}
	return wr, nil
}

// fencedForVersion maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for
// request versions older than firstFenced, which predate the code
// (KIP-588); such clients handle both alike.
func fencedForVersion(code, version, firstFenced int16) int16 {
	if code == kerr.ProducerFenced.Code && version < firstFenced {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}
