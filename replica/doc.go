// Package replica holds the partitions this broker hosts and their roles.
//
// A Partition wraps one log with what replication adds on top: the leader
// epoch, the replica set and ISR the controller assigned, and the high
// watermark, below which consumers may read and up to which acks=all waits.
// The controller's LeaderAndISR and StopReplica requests are applied here.
//
// The high watermark rule (leader only): HW = min log end offset over the
// ISR, never moving backwards. With the leader alone in the ISR it is the
// leader's log end offset, which is the single-node case. Follower log end
// offsets arrive with their fetches once replication exists; the rule is the
// pure function highWatermark so that it can be tested on its own.
package replica
