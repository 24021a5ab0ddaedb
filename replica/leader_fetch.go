package replica

// The leader's side of one partition of a follower's Fetch, apart from the
// broker's request handling (topics, authorization, sessions, long polls,
// the response's encoding): the fetch offset checked against the log, the
// follower's fetch recorded (which may advance the HW and grow the ISR),
// the leader's replication throttle, and the read up to the log end. The
// broker's Fetch handler (broker/01_fetch.go readFetch) calls it for each
// partition a follower fetches; the deterministic simulation (sim/) calls
// it for the followers' fetches it carries, so both answer with the same
// code.

import (
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/log"
)

// FollowerFetch is what a follower asks of one partition.
type FollowerFetch struct {
	ReplicaID int32
	// BrokerEpoch is the follower's broker epoch (Fetch v15+
	// replica_state.replica_epoch), -1 when not sent.
	BrokerEpoch int64
	// CurrentLeaderEpoch is the leader epoch the follower fetches at
	// (Fetch v9+), -1 when not sent.
	CurrentLeaderEpoch          int32
	FetchOffset, LogStartOffset int64
	// LastFetchedEpoch is the epoch of the follower's last batch (Fetch
	// v12+), -1 when not sent.
	LastFetchedEpoch int32
	// MaxBytes bounds the read; First: no partition before it in the
	// answer has records, so at least one whole batch is returned, and a
	// read is made even when MaxBytes is not positive.
	MaxBytes int32
	First    bool
}

// FollowerRead is the leader's read of a FollowerFetch.
type FollowerRead struct {
	// State is the partition's FetchState as the read began; AtBound: the
	// fetch offset was the log end (nothing to read).
	State   FetchState
	AtBound bool
	// HighWatermark and LastStable are the offsets to answer with: after
	// the follower's fetch was recorded, or the State's when it was not.
	HighWatermark, LastStable int64
	// ErrorCode is FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH or
	// OFFSET_OUT_OF_RANGE (checked before the fetch is recorded, which it
	// then is not) or NOT_LEADER_OR_FOLLOWER (also for a stale broker
	// epoch, as Kafka answers one).
	ErrorCode int16
	// Divergence: the follower's log is not the leader's (answered with
	// diverging_epoch or OFFSET_OUT_OF_RANGE, the fetch not recorded).
	Divergence Divergence
	// Throttled: the leader's replication throttle held the records back.
	Throttled bool
	// Records is where the records read are, Err why the read failed.
	Records log.Slice
	Err     error
}

// ReadForFollower answers one partition of a follower's Fetch, as Kafka's
// leader: a fetch at another leader epoch fenced, a diverged log told so
// (Divergence), out of range when the fetch offset is outside the log
// (before the fetch is recorded), else the follower's fetch recorded
// (UpdateFollowerFetch) and the records from the fetch offset up to the
// log end, unless the leader's replication throttle holds them back.
func (m *Manager) ReadForFollower(p *Partition, f FollowerFetch) FollowerRead {
	st := p.FetchState()
	r := FollowerRead{State: st, HighWatermark: st.HighWatermark, LastStable: st.LastStable}
	// Checked on every read, not only when the fetch arrived: a parked
	// fetch re-read after the leader epoch moved on is fenced and not
	// recorded, as Kafka's fetchRecords does, or a follower the controller
	// just took out of the ISR would be proposed back by a fetch it sent
	// before.
	if r.ErrorCode = EpochErrorCode(p.CheckLeaderEpoch(f.CurrentLeaderEpoch)); r.ErrorCode != 0 {
		return r
	}
	if r.Divergence = p.Divergence(f.LastFetchedEpoch, f.FetchOffset, st.LogStart); r.Divergence.OutOfRange || r.Divergence.Diverged {
		return r
	}
	leo := st.LogEnd
	if f.FetchOffset < st.LogStart || f.FetchOffset > leo {
		r.ErrorCode = kerr.OffsetOutOfRange.Code
		return r
	}
	if err := p.UpdateFollowerFetch(f.ReplicaID, f.BrokerEpoch, f.FetchOffset, f.LogStartOffset); err != nil {
		if stale := (*StaleBrokerEpochError)(nil); errors.As(err, &stale) && stale.First {
			m.logger.Warn("refused a follower's fetch from an earlier broker epoch", "partition", stale.TopicPartition, "follower", stale.ReplicaID, "broker_epoch", stale.BrokerEpoch, "recorded_broker_epoch", stale.Recorded)
		}
		r.ErrorCode = kerr.NotLeaderForPartition.Code
		return r
	}
	r.HighWatermark, r.LastStable = p.HighWatermark(), p.LastStableOffset()
	r.AtBound = f.FetchOffset == leo
	if r.Throttled = m.leaderThrottles(p, f.ReplicaID); r.Throttled {
		return r // an empty answer, as Kafka's leader gives a throttled replica
	}
	if f.MaxBytes <= 0 && !f.First {
		return r
	}
	r.Records, r.Err = p.log.Read(f.FetchOffset, max(f.MaxBytes, 0), leo, f.First)
	return r
}

// leaderThrottles reports whether p's records are held back from follower:
// the partition is throttled on the leader (KIP-73), the follower is not
// in the ISR, and the leader's rate is over the quota.
func (m *Manager) leaderThrottles(p *Partition, follower int32) bool {
	q := m.cfg.LeaderQuota
	tp := p.TopicPartition()
	if !q.IsThrottled(tp.Topic, tp.Partition) {
		return false
	}
	return q.ShouldThrottle(tp.Topic, tp.Partition, slices.Contains(p.State().ISR, follower))
}

// EpochErrorCode is the error code of a failed current_leader_epoch check
// (CheckLeaderEpoch), 0 for none.
func EpochErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrFencedEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, ErrUnknownEpoch):
		return kerr.UnknownLeaderEpoch.Code
	}
	return kerr.UnknownServerError.Code
}
