// Package group is Brook's group coordinator for Kafka's classic group
// protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
// OffsetFetch, DescribeGroups, ListGroups, DeleteGroups and OffsetDelete,
// with Kafka's semantics and error codes.
//
// # Shape
//
// The state of all groups of one __consumer_offsets partition is a shard
// (rebalance.go, join.go, offsets.go): a pure state machine whose methods
// take the current time, change the groups and return effects (answers to
// waiting JoinGroup/SyncGroup requests, records to append). The Coordinator
// (coordinator.go) is the driver: it keeps one lock per led partition, runs
// shard methods under it, appends records through one writer goroutine per
// partition and answers waiters outside the lock. Run fires deadlines
// (session timeouts, join and sync deadlines, the initial rebalance delay,
// pending members, offsets retention) at their time, from one timer armed
// for the earliest of them (timers.go).
//
// The writer appends queued writes in queue order, several per batch, and
// runs their completions in that same order, so the in-memory state follows
// the log order. A group becomes Stable, a static member's new id becomes
// valid, and an offset becomes visible only once its record is committed.
//
// # Groups to partitions
//
// Group G belongs to partition abs(hashCode(G)) % offsets.topic.num.partitions,
// with Java's String.hashCode over UTF-16 code units and Kafka's Utils.abs,
// which maps MinInt32 to 0. The broker answers FindCoordinator with the
// leader of that partition.
//
// # Records in __consumer_offsets
//
// Keys and values use Kafka's schemas (kmsg encodes them); all integers are
// big-endian, strings are int16 length + UTF-8, bytes int32 length + data,
// and a nullable string has length -1 for null. Each record of the v2 batch
// is one key/value; a record with a null value is a tombstone.
//
//	offset commit key (version 1)      group metadata key (version 2)
//	+---------+-------+-------+------+ +---------+-------+
//	| version | group | topic | part | | version | group |
//	| int16=1 | str   | str   | i32  | | int16=2 | str   |
//	+---------+-------+-------+------+ +---------+-------+
//
//	offset commit value (version 3; version 1 when the commit carried a
//	retention time, OffsetCommit v2-v4, with expire_timestamp and without
//	leader_epoch)
//	+---------+--------+--------------+----------+------------------+
//	| version | offset | leader_epoch | metadata | commit_timestamp |
//	| int16=3 | i64    | i32          | str      | i64 (Unix ms)    |
//	+---------+--------+--------------+----------+------------------+
//
//	group metadata value (version 3)
//	+---------+---------------+------------+----------+---------+-------------------------+---------+
//	| version | protocol_type | generation | protocol | leader  | current_state_timestamp | members |
//	| int16=3 | str           | i32        | str/null | str/null| i64 (Unix ms, -1 none)  | array   |
//	+---------+---------------+------------+----------+---------+-------------------------+---------+
//	member: member_id str, group_instance_id str/null, client_id str,
//	client_host str, rebalance_timeout i32 (ms), session_timeout i32 (ms),
//	subscription bytes (metadata of the selected protocol), assignment bytes
//
// These are the versions Kafka 2.3 and later (3.x, 4.x classic groups)
// write, so Kafka's kafka-dump-log --offsets-decoder reads Brook's offsets
// topic, and a partition written by Kafka loads here. Group metadata is
// written when a generation is assigned (leader's SyncGroup), when a group
// becomes empty, and when a static member rejoins; offset records on every
// commit; tombstones on DeleteGroups, OffsetDelete and expiry.
//
// # Loading
//
// OnElected replays the partition from its log start offset to its log end
// offset (not the high watermark, which trails on a new leader), and serves
// what it read only once the high watermark reaches that end (load.go:
// a generation read above it may be lost at the next failover); until
// then its groups answer COORDINATOR_LOAD_IN_PROGRESS (Heartbeat answers
// NONE and SyncGroup REBALANCE_IN_PROGRESS, as Kafka does for old
// clients). Groups with members come back Stable and their
// members have one session timeout to heartbeat. OnResigned answers every
// waiting request NOT_COORDINATOR and drops the partition's groups.
//
// # Without goroutines
//
// A Partition that is also an AsyncPartition (the simulation's) gets no
// goroutine: Coordinator.Step loads it and appends its queued writes, one
// batch in flight, answered through AppendAsync's callback (async.go);
// StartOffsetCommit is OffsetCommit without its blocking wait.
package group
