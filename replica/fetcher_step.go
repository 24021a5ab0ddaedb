package replica

import (
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The follower's side of replication, one partition and one answer of the
// leader at a time, apart from the fetcher's goroutine, requests and
// locks: what to do with a Fetch answer's partition, where to start a
// truncation, and what to do with an OffsetForLeaderEpoch answer. The
// fetcher's rounds in step form (LeaderFetcher, fetcher_build.go) call
// these, for the fetcher goroutine (fetcher.go, truncate.go) and for the
// deterministic simulation (sim/), so both run the same follower code.

// FollowerStep is what one step tells the follower's driver to do next
// with the partition.
type FollowerStep struct {
	// Truncate: ask the leader where the logs diverge (OffsetForLeaderEpoch)
	// before fetching again.
	Truncate bool
	// Backoff: the answer carried an error or the log refused it; leave the
	// partition alone for replica.fetch.backoff.ms.
	Backoff bool
	// HighWatermarkKnown: the answer carried the leader's HW, and InSync
	// says whether the log end reached it (Kafka's isReplicaInSync, which
	// the follower throttle looks at).
	HighWatermarkKnown, InSync bool
}

// ApplyFetched applies one partition of a Fetch answer from leader to
// this follower's log: on OFFSET_OUT_OF_RANGE it starts over at the
// leader's log start, cuts to the leader's HW, or asks for truncation;
// on another error it backs off; otherwise it appends the records,
// follows the leader's HW and log start offset. The caller has checked
// that the answer is for the fetch offset the log still ends at.
func (p *Partition) ApplyFetched(rp *kmsg.FetchResponseTopicPartition, leader int32, logger *slog.Logger) FollowerStep {
	l := p.log
	switch rp.ErrorCode {
	case 0:
	case kerr.OffsetOutOfRange.Code:
		leo := l.LogEndOffset()
		var err error
		switch {
		case rp.LogStartOffset > leo:
			// The leader deleted what we lack: start over at its log start.
			err = l.TruncateFullyAndStartAt(rp.LogStartOffset)
		case rp.HighWatermark >= 0 && rp.HighWatermark < leo:
			// We are past the leader's end; its HW is committed on every
			// ISR member, so cutting to it loses nothing committed.
			err = l.TruncateTo(rp.HighWatermark)
		default:
			return FollowerStep{Truncate: true}
		}
		if err != nil {
			logger.Error("follower truncation after out of range", "partition", p.tp, "err", err)
			return FollowerStep{Backoff: true}
		}
		return FollowerStep{}
	default:
		// NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
		// UNKNOWN_TOPIC_*: the controller's next LeaderAndISR sorts it out.
		logger.Debug("replica fetch partition error", "partition", p.tp, "leader", leader, "err", kerr.ErrorForCode(rp.ErrorCode))
		return FollowerStep{Backoff: true}
	}
	if len(rp.RecordBatches) > 0 {
		if _, err := l.AppendAsFollower(rp.RecordBatches); err != nil {
			logger.Error("follower append", "partition", p.tp, "leader", leader, "err", err)
			return FollowerStep{Backoff: true}
		}
	}
	var step FollowerStep
	// Follower HW = min(leader HW, own LEO); SetHighWatermark clamps.
	if rp.HighWatermark >= 0 {
		p.followHighWatermark(rp.HighWatermark)
		step.HighWatermarkKnown, step.InSync = true, l.LogEndOffset() >= rp.HighWatermark
	}
	if rp.LogStartOffset > l.LogStartOffset() {
		if _, err := l.DeleteRecordsBefore(min(rp.LogStartOffset, l.HighWatermark())); err != nil {
			logger.Warn("follow leader log start offset", "partition", p.tp, "err", err)
		}
	}
	return step
}

// TruncationEpoch starts a truncation: it returns the log's latest leader
// epoch, to ask the leader where that epoch ends (OffsetForLeaderEpoch).
// A log with no epochs was never written under a leader epoch, so only
// its HW is known to be shared with the leader: it is cut there, and
// TruncationEpoch returns -1 and the step that follows.
func (p *Partition) TruncationEpoch(logger *slog.Logger) (int32, FollowerStep) {
	l := p.log
	if latest := l.LatestEpoch(); latest >= 0 {
		return latest, FollowerStep{Truncate: true}
	}
	if err := l.TruncateTo(l.HighWatermark()); err != nil {
		logger.Error("follower truncation", "partition", p.tp, "err", err)
		return -1, FollowerStep{Truncate: true, Backoff: true}
	}
	return -1, FollowerStep{}
}

// ApplyEpochAnswer truncates the follower's log from the leader's
// OffsetForLeaderEpoch answer for the epoch TruncationEpoch returned
// (Kafka's KIP-101/279 rule, truncationOffset, with the partition's
// faults); Truncate in the step says another round is needed.
func (p *Partition) ApplyEpochAnswer(rp *kmsg.OffsetForLeaderEpochResponseTopicPartition, logger *slog.Logger) FollowerStep {
	l := p.log
	if rp.ErrorCode != 0 {
		logger.Debug("OffsetForLeaderEpoch partition error", "partition", p.tp, "err", kerr.ErrorForCode(rp.ErrorCode))
		return FollowerStep{Truncate: true, Backoff: true}
	}
	leo := l.LogEndOffset()
	offset, done := p.faults.truncationOffset(rp.LeaderEpoch, rp.EndOffset, leo, l.HighWatermark(), l.EndOffsetForEpoch)
	if offset < leo {
		logger.Info("truncating divergent log tail", "partition", p.tp, "from", leo, "to", offset,
			"leader_epoch", rp.LeaderEpoch, "leader_end_offset", rp.EndOffset)
		if err := l.TruncateTo(offset); err != nil {
			logger.Error("follower truncation", "partition", p.tp, "err", err)
			return FollowerStep{Truncate: true, Backoff: true}
		}
	}
	return FollowerStep{Truncate: !done}
}
