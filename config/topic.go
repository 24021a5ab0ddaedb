package config

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Topic is the effective configuration of one topic: its overrides on
// top of the broker's defaults. The first block mirrors log.Config, which
// the broker fills from it.
type Topic struct {
	SegmentBytes       int64
	SegmentMs          int64
	SegmentIndexBytes  int32
	IndexIntervalBytes int32
	RetentionMs        int64 // -1: no time limit
	RetentionBytes     int64 // -1: no size limit
	FlushMessages      int64
	FlushMs            int64
	MaxMessageBytes    int32
	LogAppendTime      bool
	FileDeleteDelayMs  int64
	Compact            bool

	Delete                 bool // cleanup.policy contains delete
	CleanupPolicy          []string
	CompressionType        string // producer, uncompressed, gzip, snappy, lz4, zstd
	CompressionGzipLevel   int32
	CompressionLz4Level    int32
	CompressionZstdLevel   int32
	MinInSyncReplicas      int32
	UncleanLeaderElection  bool
	SegmentJitterMs        int64
	DeleteRetentionMs      int64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64
	MinCleanableDirtyRatio float64
	Preallocate            bool
	MessageTimestampType   string // CreateTime or LogAppendTime
	// The timestamp bounds already account for the deprecated
	// message.timestamp.difference.max.ms, which stands in for either
	// bound left at its default (Kafka 3.6+).
	MessageTimestampBeforeMaxMs          int64
	MessageTimestampAfterMaxMs           int64
	LeaderReplicationThrottledReplicas   []string
	FollowerReplicationThrottledReplicas []string
}

// ValidateTopicConfigs checks topic overrides as CreateTopics and
// AlterConfigs must: every name a topic config, every value valid for
// it. The error names the offending key (and value); callers answer
// INVALID_CONFIG (40).
func ValidateTopicConfigs(m map[string]string) error {
	_, err := validTopicOverrides(newTable(), m)
	return err
}

// ValidateTopic checks overrides as ValidateTopicConfigs does and also
// against this broker's defaults, as Kafka validates CreateTopics and
// AlterConfigs: min.compaction.lag.ms may not exceed max.compaction.lag.ms
// whichever side each comes from.
func (b *Broker) ValidateTopic(overrides map[string]string) error {
	if _, err := validTopicOverrides(b.tab, overrides); err != nil {
		return err
	}
	_, err := b.Topic(overrides)
	return err
}

// validTopicOverrides returns the overrides in canonical form.
func validTopicOverrides(t *table, m map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(m))
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		d, ok := t.topic[k]
		if !ok {
			return nil, fmt.Errorf("%w: unknown topic config name: %s", ErrUnknownConfig, k)
		}
		v, err := d.parse(m[k])
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	minLag, okMin := out["min.compaction.lag.ms"]
	maxLag, okMax := out["max.compaction.lag.ms"]
	if okMin && okMax {
		lo, _ := strconv.ParseInt(minLag, 10, 64)
		hi, _ := strconv.ParseInt(maxLag, 10, 64)
		if lo > hi {
			return nil, &ValueError{Name: "min.compaction.lag.ms", Value: minLag,
				Reason: fmt.Sprintf("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", lo, hi)}
		}
	}
	return out, nil
}

// topicDefault is the value a topic gets from the broker for a topic
// config without override (Kafka's KafkaConfig.extractLogConfigMap): the
// broker synonym chain converted to milliseconds, or the topic default
// when there is no synonym. from names the broker key the value came
// from ("" for the topic default); ok is false for null.
func (b *Broker) topicDefault(d *Def) (value, from string, ok bool) {
	if d.Synonym == "" {
		return d.Default, "", d.HasDefault
	}
	chain := brokerSynonyms(d.Synonym)
	for i, name := range chain {
		if !b.IsSet(name) && i < len(chain)-1 {
			continue // an unset higher-priority synonym falls through
		}
		v, ok := b.Value(name)
		if !ok {
			return "", name, false
		}
		if unit := unitMs(name); unit != 1 {
			n, _ := strconv.ParseInt(v, 10, 64)
			v = strconv.FormatInt(mulSat(n, unit), 10)
		}
		if d.Name == "retention.ms" {
			v = clampRetention(v)
		}
		if v == maxLong && (d.Name == "message.timestamp.before.max.ms" || d.Name == "message.timestamp.after.max.ms") {
			// Kafka 3.6+ (KIP-937): the broker's own bound, left at its
			// default, is the broker's deprecated difference; topics
			// inherit that effective bound.
			const diff = "log.message.timestamp.difference.max.ms"
			if dv, ok := b.Value(diff); ok && dv != maxLong {
				return dv, diff, true
			}
		}
		return v, name, true
	}
	return "", "", false
}

// clampRetention maps any negative broker retention to -1, as Kafka's
// logRetentionTimeMillis does.
func clampRetention(v string) string {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n < 0 {
		return "-1"
	}
	return v
}

func mulSat(n, m int64) int64 {
	if n > 0 && n > math.MaxInt64/m {
		return math.MaxInt64
	}
	if n < 0 && n < math.MinInt64/m {
		return math.MinInt64
	}
	return n * m
}

// TopicValue returns the effective value of one topic config for a topic
// with the given overrides ("" for null or an unknown name). Overrides
// are taken as stored; use ValidateTopicConfigs before storing them.
func (b *Broker) TopicValue(overrides map[string]string, name string) string {
	d, ok := b.tab.topic[name]
	if !ok {
		return ""
	}
	if raw, ok := overrides[name]; ok {
		if v, err := d.parse(raw); err == nil {
			return v
		}
	}
	v, _, _ := b.topicDefault(d)
	return v
}

// Topic resolves the typed configuration of a topic. Unknown override
// names are ignored (Kafka ignores them too when it builds a LogConfig);
// an invalid override value is an error.
func (b *Broker) Topic(overrides map[string]string) (Topic, error) {
	known := map[string]string{}
	for k, v := range overrides {
		if _, ok := b.tab.topic[k]; ok {
			known[k] = v
		}
	}
	valid, err := validTopicOverrides(b.tab, known)
	if err != nil {
		return Topic{}, err
	}
	vals := map[string]string{}
	for name, d := range b.tab.topic {
		if v, ok := valid[name]; ok {
			vals[name] = v
			continue
		}
		v, from, ok := b.topicDefault(d)
		if ok {
			if _, err := d.parse(v); err != nil {
				return Topic{}, fmt.Errorf("broker config %s makes an invalid %s: %w", from, name, err)
			}
		}
		vals[name] = v
	}
	return topicFrom(vals)
}

func topicFrom(v map[string]string) (Topic, error) {
	var errs []error
	i64 := func(name string) int64 {
		n, err := strconv.ParseInt(v[name], 10, 64)
		if err != nil {
			errs = append(errs, &ValueError{Name: name, Value: v[name], Reason: "not a number"})
		}
		return n
	}
	i32 := func(name string) int32 { return int32(i64(name)) }
	policy := listElems(v["cleanup.policy"])
	t := Topic{
		SegmentBytes:                         i64("segment.bytes"),
		SegmentMs:                            i64("segment.ms"),
		SegmentIndexBytes:                    i32("segment.index.bytes"),
		IndexIntervalBytes:                   i32("index.interval.bytes"),
		RetentionMs:                          i64("retention.ms"),
		RetentionBytes:                       i64("retention.bytes"),
		FlushMessages:                        i64("flush.messages"),
		FlushMs:                              i64("flush.ms"),
		MaxMessageBytes:                      i32("max.message.bytes"),
		LogAppendTime:                        v["message.timestamp.type"] == "LogAppendTime",
		FileDeleteDelayMs:                    i64("file.delete.delay.ms"),
		CleanupPolicy:                        policy,
		CompressionType:                      v["compression.type"],
		CompressionGzipLevel:                 i32("compression.gzip.level"),
		CompressionLz4Level:                  i32("compression.lz4.level"),
		CompressionZstdLevel:                 i32("compression.zstd.level"),
		MinInSyncReplicas:                    i32("min.insync.replicas"),
		UncleanLeaderElection:                v["unclean.leader.election.enable"] == "true",
		SegmentJitterMs:                      i64("segment.jitter.ms"),
		DeleteRetentionMs:                    i64("delete.retention.ms"),
		MinCompactionLagMs:                   i64("min.compaction.lag.ms"),
		MaxCompactionLagMs:                   i64("max.compaction.lag.ms"),
		Preallocate:                          v["preallocate"] == "true",
		MessageTimestampType:                 v["message.timestamp.type"],
		LeaderReplicationThrottledReplicas:   listElems(v["leader.replication.throttled.replicas"]),
		FollowerReplicationThrottledReplicas: listElems(v["follower.replication.throttled.replicas"]),
	}
	for _, p := range policy {
		t.Compact = t.Compact || p == "compact"
		t.Delete = t.Delete || p == "delete"
	}
	ratio, err := strconv.ParseFloat(v["min.cleanable.dirty.ratio"], 64)
	if err != nil {
		errs = append(errs, &ValueError{Name: "min.cleanable.dirty.ratio", Value: v["min.cleanable.dirty.ratio"], Reason: "not a number"})
	}
	t.MinCleanableDirtyRatio = ratio
	diff := i64("message.timestamp.difference.max.ms")
	t.MessageTimestampBeforeMaxMs = i64("message.timestamp.before.max.ms")
	if t.MessageTimestampBeforeMaxMs == math.MaxInt64 {
		t.MessageTimestampBeforeMaxMs = diff
	}
	t.MessageTimestampAfterMaxMs = i64("message.timestamp.after.max.ms")
	if t.MessageTimestampAfterMaxMs == math.MaxInt64 {
		t.MessageTimestampAfterMaxMs = diff
	}
	if len(errs) > 0 {
		return Topic{}, errors.Join(errs...)
	}
	if t.MinCompactionLagMs > t.MaxCompactionLagMs {
		return Topic{}, &ValueError{Name: "min.compaction.lag.ms", Value: v["min.compaction.lag.ms"],
			Reason: fmt.Sprintf("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", t.MinCompactionLagMs, t.MaxCompactionLagMs)}
	}
	return t, nil
}
