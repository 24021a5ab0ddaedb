// Package log stores partitions on disk in Apache Kafka's layout, so that
// Kafka's own tools (kafka-dump-log) read Brook's files, and runs the
// per-broker log manager (log dirs, checkpoints, retention, deletion).
//
// Directory layout (one log dir; every log.dirs entry looks the same):
//
//	<log.dir>/
//	  meta.properties                   version=0, broker.id, cluster.id (ZooKeeper mode)
//	  .kafka_cleanshutdown              {"version":0,"brokerEpoch":-1}, as Kafka; present only between a clean stop and the next start
//	  recovery-point-offset-checkpoint  per partition: offsets below are fsynced
//	  log-start-offset-checkpoint       per partition: first fetchable offset
//	  replication-offset-checkpoint     per partition: high watermark
//	  cleaner-offset-checkpoint         per compacted partition: first dirty offset
//	  <topic>-<partition>/
//	    00000000000000000000.log        record batches, exactly as on the wire
//	    00000000000000000000.index      sparse offset index
//	    00000000000000000000.timeindex  sparse time index
//	    00000000000000000000.txnindex   aborted transactions (only once there is one)
//	    00000000000000000000.log.cleaned  (and .index/.timeindex) a cleaning in progress
//	    00000000000000000000.log.swap     (and .index/.timeindex) a cleaning being swapped in
//	    00000000000000001234.snapshot   producer state at offset 1234 (Kafka's format)
//	    partition.metadata              topic ID
//	    leader-epoch-checkpoint         leader epoch -> start offset
//	  <topic>-<partition>.<uuid>-delete/  a deleted partition awaiting removal
//
// The log cleaner (compaction) writes a group's replacement as .cleaned
// files, renames them .swap to commit (the .log last), renames the old
// segments .deleted and drops the .swap suffix; recovery deletes .cleaned
// files and completes .swap ones (clean.go, clean_recovery.go). A batch
// with attribute bit 6 set carries a delete horizon in baseTimestamp.
//
// File names carry the segment's base offset (or the snapshot's offset) as
// 20 zero-padded decimal digits. A segment being deleted is renamed
// *.deleted and removed after file.delete.delay.ms.
//
// .log: a sequence of magic v2 record batches (see protocol/batch), big
// endian, each starting with baseOffset (8) and batchLength (4). Offsets
// strictly increase; recovery checks framing, offset order and the
// CRC-32C of every batch past the recovery point.
//
// .index entry, 8 bytes; one entry after each index.interval.bytes of
// batches, naming a batch's last offset and where that batch starts:
//
//	0       4                8
//	+-------+----------------+
//	| relative offset | position |
//	+-------+----------------+
//	relative offset = lastOffset - baseOffset (uint32)
//	position        = byte position of the batch in .log (uint32)
//
// .timeindex entry, 12 bytes, appended with each .index entry when the
// segment's largest timestamp grew, and once more when it rolls:
//
//	0                8                 12
//	+----------------+-----------------+
//	| timestamp      | relative offset |
//	+----------------+-----------------+
//	timestamp       = largest batch max timestamp so far (int64 ms)
//	relative offset = last offset of the batch that reached it (uint32)
//
// Both index files of the active segment are preallocated to
// segment.index.bytes (zero-filled) and trimmed to their entries when the
// segment rolls or the log closes.
//
// .txnindex entry, 34 bytes, Kafka's TransactionIndex; one per
// transaction aborted by a marker in the segment, in marker order:
//
//	0         2            10            18           26                 34
//	+---------+------------+-------------+------------+------------------+
//	| version | producerId | firstOffset | lastOffset | lastStableOffset |
//	+---------+------------+-------------+------------+------------------+
//	version = 0 (int16); lastOffset = the ABORT marker's offset;
//	lastStableOffset = the partition's LSO when the marker was written
//
// .snapshot (Kafka's ProducerStateManager format, version 1):
//
//	0         2        6       10
//	+---------+--------+-------+--------------------------------------+
//	| ver=1   | crc32c | count | producer entries (46 bytes each) ...  |
//	+---------+--------+-------+--------------------------------------+
//	crc32c (Castagnoli) covers everything from count on.
//	producer entry: producerId int64 | epoch int16 | lastSequence int32 |
//	                lastOffset int64 | offsetDelta int32 | timestamp int64 |
//	                coordinatorEpoch int32 | currentTxnFirstOffset int64
//	only the last batch of each producer (lastOffset -1: none); Brook's
//	former format (magic "BRPS", up to 5 batches) is still read.
//
// Text files, each line ending in '\n':
//
//	partition.metadata:       "version: 0" / "topic_id: <22-char URL-safe base64, no padding>"
//	leader-epoch-checkpoint:  "0" / "<count>" / "<epoch> <startOffset>" * count
//	*-offset-checkpoint:      "0" / "<count>" / "<topic> <partition> <offset>" * count
//	meta.properties:          Java properties: version=0, broker.id=<id>, cluster.id=<id>
//
// Checkpoints, partition.metadata and snapshots are replaced atomically:
// write a temporary file, fsync, rename, fsync the directory.
//
// Concurrency: a Log serializes writers (append, roll, truncation,
// deletion) on one mutex and publishes their effects under a second,
// briefly held RWMutex; readers take only the latter, see data up to the
// committed end of each segment, and get file regions (Slice) that stay
// valid for file.delete.delay.ms after the segment is deleted.
package log
