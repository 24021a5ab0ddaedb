package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// ReplicaCounts are the ReplicaManager gauges and meters.
type ReplicaCounts struct {
	Partitions, Leaders, UnderReplicated int
	ISRShrinks, ISRExpands               uint64
}

// ControllerCounts are the KafkaController gauges; all zero on a broker
// that is not the active controller, as in Kafka.
type ControllerCounts struct {
	Active                                            bool
	OfflinePartitions, GlobalPartitions, GlobalTopics int
}

// LogStats are one hosted log's gauges (kafka.log:type=Log).
type LogStats struct {
	Topic                        string
	Partition                    int32
	Size, StartOffset, EndOffset int64
	Segments                     int
}

// GroupCounts are the GroupMetadataManager gauges.
type GroupCounts struct {
	Groups, Empty, PreparingRebalance, CompletingRebalance, Stable, Dead, Offsets int
}

// GroupOffset is a group's committed offset of a partition and its lag:
// the partition's high watermark minus the offset, or -1 when this broker
// does not lead the partition and cannot tell.
type GroupOffset struct {
	Group, Topic string
	Partition    int32
	Offset, Lag  int64
}

// Source is the broker state a scrape reads. Each method is called once per
// scrape, from one scrape at a time.
type Source interface {
	ReplicaCounts() ReplicaCounts
	ControllerCounts() ControllerCounts
	// EachLog calls fn for every hosted log; the LogStats is reused.
	EachLog(fn func(*LogStats))
	// Groups returns the group gauges and appends the committed offsets
	// of the groups this broker coordinates to buf.
	Groups(buf []GroupOffset) (GroupCounts, []GroupOffset)
}

func gauge(name, mbean string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, mbean, labels, nil)
}

var (
	partitionCountDesc  = gauge("kafka_server_replicamanager_partitioncount", "kafka.server:type=ReplicaManager,name=PartitionCount")
	leaderCountDesc     = gauge("kafka_server_replicamanager_leadercount", "kafka.server:type=ReplicaManager,name=LeaderCount")
	underReplicatedDesc = gauge("kafka_server_replicamanager_underreplicatedpartitions", "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions")
	isrShrinksDesc      = gauge("kafka_server_replicamanager_isrshrinks_total", "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec")
	isrExpandsDesc      = gauge("kafka_server_replicamanager_isrexpands_total", "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec")

	activeControllerDesc  = gauge("kafka_controller_kafkacontroller_activecontrollercount", "kafka.controller:type=KafkaController,name=ActiveControllerCount")
	offlinePartitionsDesc = gauge("kafka_controller_kafkacontroller_offlinepartitionscount", "kafka.controller:type=KafkaController,name=OfflinePartitionsCount")
	globalPartitionsDesc  = gauge("kafka_controller_kafkacontroller_globalpartitioncount", "kafka.controller:type=KafkaController,name=GlobalPartitionCount")
	globalTopicsDesc      = gauge("kafka_controller_kafkacontroller_globaltopiccount", "kafka.controller:type=KafkaController,name=GlobalTopicCount")

	logSizeDesc     = gauge("kafka_log_log_size", "kafka.log:type=Log,name=Size,topic=T,partition=P", "topic", "partition")
	logStartDesc    = gauge("kafka_log_log_logstartoffset", "kafka.log:type=Log,name=LogStartOffset,topic=T,partition=P", "topic", "partition")
	logEndDesc      = gauge("kafka_log_log_logendoffset", "kafka.log:type=Log,name=LogEndOffset,topic=T,partition=P", "topic", "partition")
	logSegmentsDesc = gauge("kafka_log_log_numlogsegments", "kafka.log:type=Log,name=NumLogSegments,topic=T,partition=P", "topic", "partition")

	numGroupsDesc           = gauge("kafka_coordinator_group_groupmetadatamanager_numgroups", "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroups")
	numGroupsEmptyDesc      = gauge("kafka_coordinator_group_groupmetadatamanager_numgroupsempty", "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroupsEmpty")
	numGroupsPreparingDesc  = gauge("kafka_coordinator_group_groupmetadatamanager_numgroupspreparingrebalance", "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroupsPreparingRebalance")
	numGroupsCompletingDesc = gauge("kafka_coordinator_group_groupmetadatamanager_numgroupscompletingrebalance", "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroupsCompletingRebalance")
	numGroupsStableDesc     = gauge("kafka_coordinator_group_groupmetadatamanager_numgroupsstable", "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroupsStable")
	numGroupsDeadDesc       = gauge("kafka_coordinator_group_groupmetadatamanager_numgroupsdead", "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroupsDead")
	numOffsetsDesc          = gauge("kafka_coordinator_group_groupmetadatamanager_numoffsets", "kafka.coordinator.group:type=GroupMetadataManager,name=NumOffsets")
	consumerGroupOffsetDesc = gauge("kafka_consumergroup_current_offset", "A group's committed offset of a partition (kafka_exporter's name; Kafka has no MBean for it).", "consumergroup", "topic", "partition")
	consumerGroupLagDesc    = gauge("kafka_consumergroup_lag", "The partition's high watermark minus the group's committed offset (kafka_exporter's name; Kafka has no MBean for it).", "consumergroup", "topic", "partition")
)

// stateCollector reads a Source at scrape time. Its buffers are reused
// between scrapes, which the registry's mutex serializes.
type stateCollector struct {
	src        Source
	offsets    []GroupOffset
	partitions []string // "0", "1", ... partition labels, made once
}

// maxCachedPartitionLabel bounds the label cache; partitions above it get
// a fresh string.
const maxCachedPartitionLabel = 1 << 16

func (s *stateCollector) partitionLabel(p int32) string {
	if p >= maxCachedPartitionLabel {
		return strconv.Itoa(int(p))
	}
	for int(p) >= len(s.partitions) {
		s.partitions = append(s.partitions, strconv.Itoa(len(s.partitions)))
	}
	return s.partitions[p]
}

func (s *stateCollector) collect(ch chan<- prometheus.Metric) {
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	c := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	rc := s.src.ReplicaCounts()
	g(partitionCountDesc, float64(rc.Partitions))
	g(leaderCountDesc, float64(rc.Leaders))
	g(underReplicatedDesc, float64(rc.UnderReplicated))
	c(isrShrinksDesc, float64(rc.ISRShrinks))
	c(isrExpandsDesc, float64(rc.ISRExpands))

	cc := s.src.ControllerCounts()
	active := 0.0
	if cc.Active {
		active = 1
	}
	g(activeControllerDesc, active)
	g(offlinePartitionsDesc, float64(cc.OfflinePartitions))
	g(globalPartitionsDesc, float64(cc.GlobalPartitions))
	g(globalTopicsDesc, float64(cc.GlobalTopics))

	s.src.EachLog(func(l *LogStats) {
		if l.Partition < 0 {
			return
		}
		p := s.partitionLabel(l.Partition)
		g(logSizeDesc, float64(l.Size), l.Topic, p)
		g(logStartDesc, float64(l.StartOffset), l.Topic, p)
		g(logEndDesc, float64(l.EndOffset), l.Topic, p)
		g(logSegmentsDesc, float64(l.Segments), l.Topic, p)
	})

	var gc GroupCounts
	gc, s.offsets = s.src.Groups(s.offsets[:0])
	g(numGroupsDesc, float64(gc.Groups))
	g(numGroupsEmptyDesc, float64(gc.Empty))
	g(numGroupsPreparingDesc, float64(gc.PreparingRebalance))
	g(numGroupsCompletingDesc, float64(gc.CompletingRebalance))
	g(numGroupsStableDesc, float64(gc.Stable))
	g(numGroupsDeadDesc, float64(gc.Dead))
	g(numOffsetsDesc, float64(gc.Offsets))
	for _, o := range s.offsets {
		if o.Partition < 0 {
			continue
		}
		p := s.partitionLabel(o.Partition)
		g(consumerGroupOffsetDesc, float64(o.Offset), o.Group, o.Topic, p)
		if o.Lag >= 0 {
			g(consumerGroupLagDesc, float64(o.Lag), o.Group, o.Topic, p)
		}
	}
	clear(s.offsets) // drop the strings until the next scrape
}
