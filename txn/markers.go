package txn

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// runMarkers writes the markers of one prepared transaction, retrying
// partitions whose leaders are away, and then completes the transaction
// (Kafka's TransactionMarkerChannelManager). It stops when the partition
// is unloaded: the next coordinator resumes from the prepared record.
func (c *Coordinator) runMarkers(ps *partitionState, job MarkerJob) {
	defer ps.workers.Done()
	remaining := job.Partitions
	for {
		if len(remaining) > 0 {
			var stop bool
			remaining, stop = c.sendMarkers(ps, job, remaining)
			if stop {
				return
			}
			if len(remaining) > 0 {
				if !c.backoff(ps) {
					return
				}
				continue
			}
		}
		notify := make(chan error, 1)
		queued := false
		code := c.stepPartition(ps, func(s *shard, now time.Time, eff *effects) {
			queued = s.completeTxn(job, now, eff, notify)
		})
		if code != 0 || !queued {
			return
		}
		err := <-notify
		if err == nil || errors.Is(err, ErrNotLeader) {
			return
		}
		if !c.backoff(ps) {
			return
		}
	}
}

// sendMarkers sends one round and returns the partitions to retry; stop
// means the transaction belongs to a newer producer or coordinator epoch.
func (c *Coordinator) sendMarkers(ps *partitionState, job MarkerJob, tps []TopicPartition) (retry []TopicPartition, stop bool) {
	j := job
	j.Partitions = tps
	return c.markerAnswer(job, tps, c.cfg.Markers.WriteMarkers(ps.ctx, j))
}

// markerAnswer reads one round's answer for tps: the partitions to retry,
// or stop when the transaction belongs to a newer producer or
// coordinator epoch.
func (c *Coordinator) markerAnswer(job MarkerJob, tps []TopicPartition, res map[TopicPartition]int16) (retry []TopicPartition, stop bool) {
	for _, tp := range tps {
		code, ok := res[tp]
		switch {
		case !ok:
			retry = append(retry, tp)
		case code == 0:
		case code == kerr.InvalidProducerEpoch.Code || code == kerr.TransactionCoordinatorFenced.Code:
			// The producer or the coordinator moved on; the transaction
			// is no longer ours to complete.
			c.log.Warn("transaction markers refused", "transactional_id", job.TransactionalID, "partition", tp, "code", code)
			return nil, true
		case code == kerr.UnsupportedForMessageFormat.Code || code == kerr.UnsupportedVersion.Code:
			// Kafka drops such partitions: the producer could not have
			// written transactional data to them.
		default:
			retry = append(retry, tp)
		}
	}
	return retry, false
}

// backoff waits MarkerRetryBackoff and reports false if the partition was
// unloaded meanwhile.
func (c *Coordinator) backoff(ps *partitionState) bool {
	t := time.NewTimer(c.cfg.MarkerRetryBackoff)
	defer t.Stop()
	select {
	case <-ps.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
