// Package txn is Brook's transaction coordinator (KIP-98): InitProducerId
// with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
// DescribeTransactions and ListTransactions, with Kafka's semantics and
// error codes, for clients of transaction version 1 and of version 2
// (KIP-890 part 2: an epoch bump at every EndTxn, api_tv2.go), told apart
// by their request versions.
//
// # Shape
//
// The transactional ids of one __transaction_state partition form a shard
// (shard.go, api.go): a pure state machine whose steps take the time,
// change the ids and return effects: records to append, marker jobs, and
// answers to waiting requests. Every transition is checked against Kafka's
// table (state.go). A step that changes an id marks it pending and queues
// its record; the change is applied, and the client answered, only when
// the record is committed, so memory never runs ahead of the log.
//
// The Coordinator (coordinator.go) is the driver: one lock per led
// partition, one writer goroutine appending records in order, one marker
// goroutine per prepared transaction (markers.go), and a ticker for
// timeouts and id expiry (Run). New producer ids come from the broker's
// allocator, called outside the lock between two passes of InitProducerId.
//
// # Ids to partitions
//
// Transactional id T belongs to partition
// abs(hashCode(T)) % transaction.state.log.num.partitions, Kafka's mapping
// (internal/coordhash); the broker answers FindCoordinator key type 1 with
// that partition's leader.
//
// # Records
//
// One record per transition, key TxnMetadataKey v0 (the id), value
// TxnMetadataValue v1 (with the previous and next producer ids and the
// client's transaction version), a tombstone for an expired id
// (records.go, docs/storage.md).
//
// # Loading
//
// A new leader's load replays the partition to its log end, as Kafka's
// does: its HW trails until the followers fetch again, and the records
// above it may be transitions the previous coordinator acknowledged. But
// the partition answers COORDINATOR_LOAD_IN_PROGRESS (which clients
// retry) and resumes no markers until its HW reaches that end (load.go).
// Kafka's coordinator acts at once, and a failover that loses those
// records then has the next coordinator decide a prepared transaction
// again, possibly the other way, or forget partitions a client was told
// were added, whose batches hang. A follower that never catches up leaves
// the ISR, after which the HW is the log end and the load completes.
package txn
