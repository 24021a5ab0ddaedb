package config

import "errors"

// topicDefs lists the topic configs of Kafka 3.9's LogConfig with their
// broker synonyms. The default written here is the one Kafka documents;
// a topic's effective default comes from the broker synonym.
func topicDefs() []Def {
	noTiered := unused("Brook has no tiered storage.")
	noLevel := unused("Brook compresses with each codec's default level (gzip 6, lz4 9, zstd 3).")
	return []Def{
		tc("cleanup.policy", List, "delete", "log.cleanup.policy",
			"What happens to old segments: \"delete\" removes them past retention.ms or retention.bytes, \"compact\" keeps the latest record of each key; both may be given.",
			valid(listOf("compact", "delete")), brook(compactNote)),
		tc("compression.type", String, "producer", "compression.type",
			"The codec batches are stored with: gzip, snappy, lz4, zstd, uncompressed, or producer to keep the codec the producer used.",
			valid(oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"))),
		tc("compression.gzip.level", Int, "-1", "compression.gzip.level",
			"The gzip level used when compression.type is gzip; -1 is the codec's default.", valid(gzipLevel()), noLevel),
		tc("compression.lz4.level", Int, "9", "compression.lz4.level",
			"The lz4 level used when compression.type is lz4.", valid(between(1, 17)), noLevel),
		tc("compression.zstd.level", Int, "3", "compression.zstd.level",
			"The zstd level used when compression.type is zstd.", valid(between(-131072, 22)), noLevel),
		tc("delete.retention.ms", Long, "86400000", "log.cleaner.delete.retention.ms",
			"How long tombstones (records with a null value) stay in a compacted topic; a consumer reading from the start must finish within this time to see every delete.",
			valid(atLeast(0))),
		tc("file.delete.delay.ms", Long, "60000", "log.segment.delete.delay.ms",
			"How long a deleted segment's files wait before they are removed from disk.", valid(atLeast(0))),
		tc("flush.messages", Long, maxLong, "log.flush.interval.messages",
			"Fsync the log after this many messages; 1 fsyncs every write. The default leaves flushing to the operating system and durability to replication.",
			valid(atLeast(1))),
		tc("flush.ms", Long, maxLong, "log.flush.interval.ms",
			"Fsync the log when its oldest unflushed message is this many milliseconds old.", valid(atLeast(0))),
		tc("follower.replication.throttled.replicas", List, "", "",
			"Replicas whose follower-side replication is throttled, as partition:broker pairs, or * for all. Set by kafka-reassign-partitions.",
			valid(throttledReplicas())),
		tc("index.interval.bytes", Int, "4096", "log.index.interval.bytes",
			"Bytes of log between two offset index entries; smaller values make lookups closer and the index bigger.",
			valid(atLeast(0))),
		tc("leader.replication.throttled.replicas", List, "", "",
			"Replicas whose leader-side replication is throttled, as partition:broker pairs, or * for all. Set by kafka-reassign-partitions.",
			valid(throttledReplicas())),
		tc("local.retention.bytes", Long, "-2", "log.local.retention.bytes",
			"Tiered storage: bytes kept on local disk; -2 means retention.bytes.", valid(atLeast(-2)), noTiered),
		tc("local.retention.ms", Long, "-2", "log.local.retention.ms",
			"Tiered storage: time kept on local disk; -2 means retention.ms.", valid(atLeast(-2)), noTiered),
		tc("max.compaction.lag.ms", Long, maxLong, "log.cleaner.max.compaction.lag.ms",
			"The most time a record may stay uncompacted in a compacted topic.", valid(atLeast(1))),
		tc("max.message.bytes", Int, "1048588", "message.max.bytes",
			"The largest record batch (after compression) the topic accepts; bigger ones get MESSAGE_TOO_LARGE.",
			valid(atLeast(0))),
		newDefLow(tc("message.downconversion.enable", Boolean, "true", "log.message.downconversion.enable",
			"Whether fetches from old consumers may be answered with down-converted record formats.",
			unused("Brook serves only record batch format v2."))),
		tc("message.format.version", String, "3.0-IV1", "log.message.format.version",
			"Deprecated. The record format version used for appends.",
			valid(kafkaVersion()), unused("Brook always writes record batch format v2.")),
		tc("message.timestamp.after.max.ms", Long, maxLong, "log.message.timestamp.after.max.ms",
			"With CreateTime, reject batches holding a record whose timestamp is more than this many milliseconds ahead of the broker's clock (INVALID_TIMESTAMP).",
			valid(atLeast(0))),
		tc("message.timestamp.before.max.ms", Long, maxLong, "log.message.timestamp.before.max.ms",
			"With CreateTime, reject batches holding a record whose timestamp is more than this many milliseconds behind the broker's clock (INVALID_TIMESTAMP).",
			valid(atLeast(0))),
		tc("message.timestamp.difference.max.ms", Long, maxLong, "log.message.timestamp.difference.max.ms",
			"Deprecated. With CreateTime, the largest difference either way between a batch's timestamp and the broker's clock; used for message.timestamp.before.max.ms and message.timestamp.after.max.ms while they are at their defaults.",
			valid(atLeast(0))),
		tc("message.timestamp.type", String, "CreateTime", "log.message.timestamp.type",
			"CreateTime keeps the producer's timestamps; LogAppendTime stamps each batch with the broker's clock at append.",
			valid(oneOf("CreateTime", "LogAppendTime"))),
		tc("min.cleanable.dirty.ratio", Double, "0.5", "log.cleaner.min.cleanable.ratio",
			"The least share of a compacted log that must be uncleaned before the cleaner works on it; higher means fewer, cheaper cleanings and more duplicates on disk.",
			valid(betweenFloat(0, 1))),
		tc("min.compaction.lag.ms", Long, "0", "log.cleaner.min.compaction.lag.ms",
			"The least time a record stays uncompacted in a compacted topic.", valid(atLeast(0))),
		tc("min.insync.replicas", Int, "1", "min.insync.replicas",
			"With acks=all, the fewest in-sync replicas for which a write succeeds; below it producers get NOT_ENOUGH_REPLICAS.",
			valid(atLeast(1))),
		tc("preallocate", Boolean, "false", "log.preallocate",
			"Whether a new segment file is preallocated to segment.bytes.",
			unused("Brook does not preallocate segment files; it preallocates only the index files, as Kafka always does.")),
		tc("remote.log.copy.disable", Boolean, "false", "",
			"Tiered storage: stop copying segments to remote storage.", noTiered),
		tc("remote.log.delete.on.disable", Boolean, "false", "",
			"Tiered storage: delete remote data when tiered storage is turned off.", noTiered),
		tc("remote.storage.enable", Boolean, "false", "",
			"Tiered storage: copy segments to remote storage.",
			valid(validator{check: noTieredStorage, desc: "false"}),
			brook("Brook has no tiered storage, so true is refused, as Kafka refuses it when remote.log.storage.system.enable is false.")),
		tc("retention.bytes", Long, "-1", "log.retention.bytes",
			"With the delete policy, remove the oldest segments of a partition while it is larger than this; -1 means no size limit. The limit is per partition.",
		),
		tc("retention.ms", Long, "604800000", "log.retention.ms",
			"With the delete policy, remove segments whose newest record is older than this many milliseconds; -1 keeps them for ever.",
			valid(atLeast(-1))),
		tc("segment.bytes", Int, "1073741824", "log.segment.bytes",
			"The size at which the active segment file is closed and a new one started; retention works a whole segment at a time.",
			valid(atLeast(14))),
		tc("segment.index.bytes", Int, "10485760", "log.index.size.max.bytes",
			"The size the offset and time index files of a segment are preallocated to; a full index also rolls the segment.",
			valid(atLeast(4))),
		tc("segment.jitter.ms", Long, "0", "log.roll.jitter.ms",
			"The largest random time subtracted from segment.ms, so that partitions do not all roll at once.",
			valid(atLeast(0))),
		tc("segment.ms", Long, "604800000", "log.roll.ms",
			"Roll the active segment after this many milliseconds even if it is not full, so that retention and compaction can act on it.",
			valid(atLeast(1))),
		tc("unclean.leader.election.enable", Boolean, "false", "unclean.leader.election.enable",
			"Whether a replica outside the ISR may become leader when no ISR member is alive, at the cost of losing data. The controller reads the topic override at each election, before the broker-level value; setting it to true elects leaders for the topic's offline partitions at once."),
	}
}

// compactNote says what cleanup.policy=compact does.
const compactNote = "compact makes keys required (records without a key fail with INVALID_RECORD) and the log cleaner keeps the latest record of each key (see docs/storage.md); with compact alone retention deletes nothing, with compact,delete retention.ms and retention.bytes apply."

func newDefLow(d Def) Def {
	d.Importance = Low
	return d
}

func noTieredStorage(v string) error {
	if v == "true" {
		return errors.New("tiered storage is disabled on this broker (Brook has none), so a topic cannot enable remote storage")
	}
	return nil
}
