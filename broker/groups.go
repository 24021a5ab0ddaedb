package broker

import (
	"context"
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
// coordinator sees it.
type offsetsPartition struct {
	p      *replica.Partition
	minISR int
}

func (o offsetsPartition) Append(ctx context.Context, b []byte) (int64, error) {
	info, err := o.p.AppendAsLeader(b, -1, o.minISR)
	if err != nil {
		return -1, fmt.Errorf("append to %s: %w", o.p.TopicPartition(), err)
	}
	if err := o.p.WaitForHighWatermark(ctx, info.LastOffset+1); err != nil {
		return -1, fmt.Errorf("commit on %s: %w", o.p.TopicPartition(), err)
	}
	return info.FirstOffset, nil
}

func (o offsetsPartition) Read(offset int64, maxBytes int32) ([]byte, error) {
	s, err := o.p.Log().Read(offset, maxBytes, o.p.HighWatermark(), true)
	if err != nil {
		return nil, err
	}
	if s.Size == 0 {
		return nil, nil
	}
	return s.ReadInto(make([]byte, 0, s.Size))
}

func (o offsetsPartition) LogStartOffset() int64 { return o.p.Log().LogStartOffset() }
func (o offsetsPartition) HighWatermark() int64  { return o.p.HighWatermark() }

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
	minISR := int(l.b.topicConfig(tp.Topic).MinInSyncReplicas)
	l.b.groups.OnElected(tp.Partition, epoch, offsetsPartition{p: p, minISR: minISR})
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
