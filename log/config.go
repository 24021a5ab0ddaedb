package log

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// dirName is the partition directory's name under a log dir, as Kafka names it.
func (tp TopicPartition) dirName() string { return tp.String() }

// parseDirName reverses dirName. The topic may itself contain '-', so the
// partition is what follows the last one. Directories that are not plain
// partitions (ending -delete, -future, -stray) are rejected.
func parseDirName(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: name[:i], Partition: int32(p)}, true
}

// Config is one topic's effective log configuration. Field comments give the
// Kafka topic-level name and its default.
type Config struct {
	SegmentBytes       int64 // segment.bytes (1073741824)
	SegmentMs          int64 // segment.ms (604800000)
	SegmentJitterMs    int64 // segment.jitter.ms (0)
	SegmentIndexBytes  int32 // segment.index.bytes (10485760)
	IndexIntervalBytes int32 // index.interval.bytes (4096)
	RetentionMs        int64 // retention.ms (604800000; -1 = forever)
	RetentionBytes     int64 // retention.bytes (-1 = unlimited)
	FlushMessages      int64 // flush.messages (MaxInt64)
	FlushMs            int64 // flush.ms (MaxInt64)
	MaxMessageBytes    int32 // max.message.bytes (1048588)
	LogAppendTime      bool  // message.timestamp.type == LogAppendTime
	FileDeleteDelayMs  int64 // file.delete.delay.ms (60000)
	Compact            bool  // cleanup.policy contains compact (keys required)
	// message.timestamp.before.max.ms / message.timestamp.after.max.ms
	// (MaxInt64 disables the check; the config package owns the defaults).
	TimestampBeforeMaxMs int64
	TimestampAfterMaxMs  int64
	// Delete: cleanup.policy contains delete; only then do retention.ms
	// and retention.bytes apply.
	Delete bool
	// The cleaner's topic configs (see cleaner.go): delete.retention.ms
	// (86400000), min.compaction.lag.ms (0), max.compaction.lag.ms
	// (MaxInt64), min.cleanable.dirty.ratio (0.5).
	DeleteRetentionMs      int64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64
	MinCleanableDirtyRatio float64
}

// DefaultConfig returns Kafka's topic defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:           1 << 30,
		SegmentMs:              7 * 24 * 60 * 60 * 1000,
		SegmentIndexBytes:      10 << 20,
		IndexIntervalBytes:     4096,
		RetentionMs:            7 * 24 * 60 * 60 * 1000,
		RetentionBytes:         -1,
		FlushMessages:          math.MaxInt64,
		FlushMs:                math.MaxInt64,
		MaxMessageBytes:        1048588,
		FileDeleteDelayMs:      60000,
		Delete:                 true,
		TimestampBeforeMaxMs:   math.MaxInt64,
		TimestampAfterMaxMs:    math.MaxInt64,
		DeleteRetentionMs:      86400000,
		MaxCompactionLagMs:     math.MaxInt64,
		MinCleanableDirtyRatio: 0.5,
	}
}

// sanitized clamps values that would break the log's arithmetic; Kafka's
// config validation enforces the same lower bounds before a config gets here.
func (c Config) sanitized() Config {
	if c.SegmentBytes < 14 {
		c.SegmentBytes = 14
	}
	if c.SegmentIndexBytes < 4*offsetEntrySize*timeEntrySize {
		c.SegmentIndexBytes = 4 * offsetEntrySize * timeEntrySize
	}
	if c.IndexIntervalBytes < 0 {
		c.IndexIntervalBytes = 0
	}
	if c.SegmentMs < 1 {
		c.SegmentMs = 1
	}
	if c.FlushMessages < 1 {
		c.FlushMessages = 1
	}
	if c.TimestampBeforeMaxMs <= 0 {
		c.TimestampBeforeMaxMs = math.MaxInt64
	}
	if c.TimestampAfterMaxMs <= 0 {
		c.TimestampAfterMaxMs = math.MaxInt64
	}
	if c.FileDeleteDelayMs < 0 {
		c.FileDeleteDelayMs = 0
	}
	if c.DeleteRetentionMs < 0 {
		c.DeleteRetentionMs = 0
	}
	if c.MaxCompactionLagMs <= 0 {
		c.MaxCompactionLagMs = math.MaxInt64
	}
	return c
}
