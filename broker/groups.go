package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/controller"
	"github.com/brook-mq/brook/group"
	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/replica"
)

// ensureOffsetsTopic creates __consumer_offsets if it does not exist yet,
// with Kafka's settings for it: compacted, offsets.topic.num.partitions
// partitions, offsets.topic.segment.bytes segments. Single-node mode
// creates it with one replica whatever offsets.topic.replication.factor
// says; with ZooKeeper, Kafka's rule applies and creation waits for
// enough live brokers.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) {
	rf := b.cfg.OffsetsTopicReplicationFactor
	if b.cfg.ZookeeperConnect == "" {
		rf = 1
	}
	res := b.createTopics(ctx, []controller.TopicSpec{{
		Name:              consumerOffsetsTopic,
		NumPartitions:     b.cfg.OffsetsTopicNumPartitions,
		ReplicationFactor: rf,
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "producer",
			"segment.bytes":    strconv.Itoa(int(b.cfg.OffsetsTopicSegmentBytes)),
		},
	}}, false)
	if code := res[0].ErrorCode; code != 0 && code != kerr.TopicAlreadyExists.Code {
		b.logger.Warn("create offsets topic", "code", code, "msg", res[0].ErrorMessage)
	}
}

// offsetsPartition is a led __consumer_offsets partition as the group
// coordinator sees it. It is comparable, and equal for the same hosted
// partition, so that the coordinator keeps its groups when the controller
// names this broker leader again.
type offsetsPartition struct {
	p *replica.Partition
	b *Broker
}

func (o offsetsPartition) Append(ctx context.Context, b []byte) (int64, error) {
	// min.insync.replicas is read at each append, so that a change to the
	// topic's config applies without a new election.
	minISR := int(o.b.topicConfig(o.p.TopicPartition().Topic).MinInSyncReplicas)
	acks := o.b.cfg.OffsetsCommitRequiredAcks
	// The group coordinator writes TxnOffsetCommit's batches for their
	// producer, with its own sequences: as a coordinator, not a client.
	info, term, err := o.p.AppendAsCoordinatorInTerm(b, acks, minISR)
	if err != nil {
		return -1, fmt.Errorf("append to %s: %w", o.p.TopicPartition(), o.kafkaError(err))
	}
	if acks != -1 {
		return info.FirstOffset, nil
	}
	// The leadership term the records were appended in must still be the
	// one that commits them; after a new election they may be truncated.
	if err := o.p.WaitForCommit(ctx, info.LastOffset+1, term, minISR); err != nil {
		return -1, fmt.Errorf("commit on %s: %w", o.p.TopicPartition(), o.kafkaError(err))
	}
	return info.FirstOffset, nil
}

// kafkaError gives the group coordinator the Kafka error of a failed
// append, which it maps as Kafka's GroupMetadataManager does (a lost
// leadership answers NOT_COORDINATOR). A context's error passes as is: the
// coordinator tells its commit timeout from its own cancellation.
func (o offsetsPartition) kafkaError(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, replica.ErrNotEnoughReplicasAfterAppend):
		return fmt.Errorf("%w: %w", kerr.NotEnoughReplicasAfterAppend, err)
	}
	return fmt.Errorf("%w: %w", kerr.ErrorForCode(appendErrorCode(err)), err)
}

func (o offsetsPartition) Read(offset int64, maxBytes int32) ([]byte, error) {
	s, err := o.p.Log().Read(offset, maxBytes, o.p.Log().LogEndOffset(), true)
	if err != nil {
		return nil, err
	}
	if s.Size == 0 {
		return nil, nil
	}
	return s.ReadInto(make([]byte, 0, s.Size))
}

func (o offsetsPartition) LogStartOffset() int64 { return o.p.Log().LogStartOffset() }
func (o offsetsPartition) LogEndOffset() int64   { return o.p.Log().LogEndOffset() }

// HighWatermark and WaitForHighWatermark let the group and transaction
// coordinators act on their load only once the records they read are
// committed (group/load.go, txn/load.go). The wait ends with ErrNotLeader
// if this broker no longer leads the partition; its Resigned then unloads
// the coordinator's partition, and a later leadership loads it anew.
func (o offsetsPartition) HighWatermark() int64 { return o.p.HighWatermark() }

func (o offsetsPartition) WaitForHighWatermark(ctx context.Context, offset int64) error {
	if err := o.p.WaitForHighWatermark(ctx, offset); err != nil {
		return fmt.Errorf("wait for the high watermark of %s: %w", o.p.TopicPartition(), err)
	}
	return nil
}

// leadershipListener forwards leadership of __consumer_offsets partitions
// to the group coordinator and of __transaction_state partitions to the
// transaction coordinator.
type leadershipListener struct{ b *Broker }

func (l leadershipListener) BecameLeader(p *replica.Partition, epoch int32) {
	tp := p.TopicPartition()
	if tp.Topic == transactionStateTopic {
		l.b.onTxnStateLeader(p, epoch)
		return
	}
	if tp.Topic != consumerOffsetsTopic {
		return
	}
	l.b.groups.OnElected(tp.Partition, epoch, offsetsPartition{p: p, b: l.b})
}

func (l leadershipListener) Resigned(tp log.TopicPartition, epoch int32) {
	switch tp.Topic {
	case consumerOffsetsTopic:
		l.b.groups.OnResigned(tp.Partition, epoch)
	case transactionStateTopic:
		l.b.txns.OnResigned(tp.Partition, epoch)
	}
}

// groupContext carries the client id and host that the coordinator records
// for members and shows in DescribeGroups.
func (r *request) groupContext(ctx context.Context) context.Context {
	return group.WithClientInfo(ctx, r.clientID, r.clientHost)
}
