package broker

import (
	"context"
	"net"
	"time"

	"github.com/brook-mq/brook/group"
	"github.com/brook-mq/brook/metrics"
	"github.com/brook-mq/brook/replica"
)

// metricsState reads the broker's state for a scrape (metrics.Source). The
// registry calls it from one scrape at a time, so its buffers are reused:
// a scrape of 10,000 partitions allocates no slice of them.
type metricsState struct {
	b       *Broker
	parts   []*replica.Partition
	offsets []group.CommittedOffset
	log     metrics.LogStats
}

func (s *metricsState) partitions() []*replica.Partition {
	clear(s.parts)
	s.parts = s.b.replicas.AppendPartitions(s.parts[:0])
	return s.parts
}

func (s *metricsState) ReplicaCounts() metrics.ReplicaCounts {
	var c metrics.ReplicaCounts
	for _, p := range s.partitions() {
		c.Partitions++
		if leader, replicas, isr := p.ReplicaCounts(); leader {
			c.Leaders++
			if isr < replicas {
				c.UnderReplicated++
			}
		}
	}
	c.ISRShrinks, c.ISRExpands = s.b.replicas.ISRChanges()
	return c
}

// ControllerCounts counts from the metadata cache, which the controller
// keeps current; only the active controller reports them, as in Kafka.
func (s *metricsState) ControllerCounts() metrics.ControllerCounts {
	ctrl := s.b.ctrl
	if ctrl == nil || !ctrl.IsActive() {
		return metrics.ControllerCounts{}
	}
	c := metrics.ControllerCounts{Active: true}
	c.GlobalTopics, c.GlobalPartitions, c.OfflinePartitions = s.b.meta.partitionCounts()
	return c
}

func (s *metricsState) EachLog(fn func(*metrics.LogStats)) {
	for _, p := range s.partitions() {
		l, tp := p.Log(), p.TopicPartition()
		s.log = metrics.LogStats{
			Topic: tp.Topic, Partition: tp.Partition,
			Size: l.Size(), StartOffset: l.LogStartOffset(), EndOffset: l.LogEndOffset(), Segments: l.NumSegments(),
		}
		fn(&s.log)
	}
}

// Groups reads the coordinator's groups; a committed offset's lag is the
// high watermark minus it where this broker leads the partition, as
// kafka-consumer-groups computes it from ListOffsets.
func (s *metricsState) Groups(buf []metrics.GroupOffset) (metrics.GroupCounts, []metrics.GroupOffset) {
	var n group.Counts
	clear(s.offsets)
	n, s.offsets = s.b.groups.Stats(s.offsets[:0])
	c := metrics.GroupCounts{
		Groups: n.Groups, Offsets: n.Offsets,
		Empty:               n.ByState[group.StateEmpty],
		PreparingRebalance:  n.ByState[group.StatePreparingRebalance],
		CompletingRebalance: n.ByState[group.StateCompletingRebalance],
		Stable:              n.ByState[group.StateStable],
		Dead:                n.ByState[group.StateDead],
	}
	for _, o := range s.offsets {
		lag := int64(-1)
		if p := s.b.replicas.Get(o.Topic, o.Partition); p != nil && p.IsLeader() {
			lag = max(p.HighWatermark()-o.Offset, 0)
		}
		buf = append(buf, metrics.GroupOffset{Group: o.Group, Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, Lag: lag})
	}
	return c, buf
}

// listenMetrics binds brook.metrics.listener when it is set.
func (b *Broker) listenMetrics() error {
	b.metrics = metrics.New(&metricsState{b: b}, time.Now)
	if b.cfg.MetricsListener == "" {
		return nil
	}
	srv, err := metrics.Listen(b.cfg.MetricsListener, b.metrics.Handler(b.cfg.MetricsPprofEnable))
	if err != nil {
		return err
	}
	b.metricsServer = srv
	return nil
}

// MetricsAddr is the bound address of the metrics listener, nil without one.
func (b *Broker) MetricsAddr() net.Addr {
	if b.metricsServer == nil {
		return nil
	}
	return b.metricsServer.Addr()
}

// serveMetrics serves the metrics listener until stop, then waits up to a
// few seconds for scrapes in progress.
func (b *Broker) serveMetrics(stop <-chan struct{}) {
	srv := b.metricsServer
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(); err != nil {
			b.logger.Error("metrics listener", "err", err)
		}
	}()
	b.logger.Info("metrics listening", "addr", srv.Addr().String(), "pprof", b.cfg.MetricsPprofEnable)
	<-stop
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	<-done
}
