// Package replica holds the partitions this broker hosts and their roles,
// and copies followers' logs from their leaders.
//
// A Partition wraps one log with what replication adds on top: the leader
// epoch, the replica set, ISR and partition epoch the controller assigned,
// and the high watermark, below which consumers may read and up to which
// acks=all waits. The controller's LeaderAndISR and StopReplica requests
// are applied here (Manager.ApplyLeaderAndISR).
//
// Leader side. Followers fetch like consumers but with their broker id;
// each fetch offset is the follower's log end offset, and each fetch
// carries its log start offset (UpdateFollowerFetch).
// The high watermark is the minimum log end offset over the ISR, never
// moving backwards (highWatermark, a pure function). A follower is in sync
// while it reached the leader's log end offset within
// replica.lag.time.max.ms (followerState, Kafka's lastCaughtUpTime rule);
// the manager checks every half of that period and proposes dropping
// laggards, and a follower's fetch that reaches the HW and the start of the
// current leadership proposes adding it back. Proposals go to the
// controller as AlterPartition; until it answers, the HW is computed over
// the union of the committed and proposed ISR (KIP-497's maximal ISR), so
// it never advances on an ISR the controller might refuse. One change per
// partition is pending at a time, and it stays pending until the
// controller's answer is known (alter.go, Kafka's handleAlterPartitionError):
// a failed or unanswered request is sent again, since the controller may
// have applied it; OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA reset to
// the committed ISR; errors saying our state is stale keep it pending until
// the next LeaderAndISR. A change names each member with the broker epoch
// its fetches carried when it was proposed (KIP-903), so the controller
// refuses one built from a follower's earlier incarnation; a fetch at a
// new broker epoch starts the follower's state afresh.
//
// DeleteRecords (WaitForLowWatermark, low_watermark.go) completes when the
// low watermark, the least log start offset over the replicas on live
// brokers as followers report it in their fetches, reaches the deleted
// offset (Kafka's DelayedDeleteRecords); followers move their log start
// offset to the leader's from the fetch answer.
//
// acks=all (WaitForCommit) completes when the HW covers the batch, with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is then below
// min.insync.replicas, and fails with ErrNotLeader once this broker stops
// leading or leads again in a later term (its records may be gone).
//
// Follower side. One fetcher per leader broker (fetcher.go) batches every
// partition followed from it into one Fetch. A partition joining a fetcher
// first truncates: OffsetForLeaderEpoch for its latest epoch tells where
// that epoch ends on the leader, and the log is cut there (truncate.go,
// Kafka's KIP-101/279 rule; truncationOffset is pure); an UNDEFINED answer
// cuts to the follower's HW. A new leader records its epoch's start offset
// in the log's epoch cache on election, so it can answer for its own epoch
// before writing in it (AnswerEpochs, leader_epoch.go, is the leader's
// answer, for the broker's handler and the simulation). Fetched batches are
// appended as they are (Log.AppendAsFollower) and the follower's HW is
// min(leader HW, own LEO). Role changes remove a partition from its
// fetcher under the fetcher's lock first, so no follower append races a
// new leadership.
//
// Lock order: Manager.fetchMu -> fetcher.mu -> Partition.roleMu ->
// Partition.mu -> log.Log. A leader append holds roleMu for reading from
// its leadership check to the write, a role change for writing.
package replica
