package txn

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// limits are the broker configs the state machine applies.
type limits struct {
	maxTimeoutMs    int32 // transaction.max.timeout.ms
	idExpirationMs  int64 // transactional.id.expiration.ms
	offsetsPartsFor func(groupID string) int32
	faults          Faults
}

// shard holds the transactional ids of one __transaction_state partition.
// Its methods are the pure state machine: they take the time, change the
// ids and return effects; the Coordinator runs them under the partition's
// lock.
type shard struct {
	partition int32
	// coordinatorEpoch is the partition's leader epoch, sent with markers.
	coordinatorEpoch int32
	limits           limits
	txns             map[string]*txnMetadata
}

func newShard(partition, coordinatorEpoch int32, l limits) *shard {
	return &shard{partition: partition, coordinatorEpoch: coordinatorEpoch, limits: l, txns: map[string]*txnMetadata{}}
}

// transition starts moving m to t: it checks Kafka's transition rules,
// marks m pending and queues t's record. On success done sees m already
// moved to t; on failure m stays where it was.
func (s *shard) transition(m *txnMetadata, t snapshot, eff *effects, done func(s *shard, err error, now time.Time, eff *effects)) int16 {
	return s.transitionFrom(m, m.state, t, eff, done)
}

// transitionFrom is transition checked as a move from the given state,
// for the abort that follows an in-memory epoch fence.
func (s *shard) transitionFrom(m *txnMetadata, from State, t snapshot, eff *effects, done func(s *shard, err error, now time.Time, eff *effects)) int16 {
	if !validTransition(from, t.state) {
		return kerr.InvalidTxnState.Code
	}
	m.pending = true
	eff.writes = append(eff.writes, write{
		record: metadataRecord(m.id, t),
		done: func(s *shard, err error, now time.Time, eff *effects) {
			m.pending = false
			if err == nil {
				m.snapshot = t
			}
			if done != nil {
				done(s, err, now, eff)
			}
		},
	})
	return 0
}

// markersFor is the marker job of a transaction in a prepare state.
func (s *shard) markersFor(m *txnMetadata) MarkerJob {
	return MarkerJob{
		TransactionalID:    m.id,
		ProducerID:         m.producerID,
		ProducerEpoch:      m.epoch,
		Commit:             m.state == StatePrepareCommit,
		Partitions:         m.partitions,
		CoordinatorEpoch:   s.coordinatorEpoch,
		TransactionVersion: int8(m.clientTV),
	}
}

// prepareEnd moves an ongoing transaction to PrepareCommit or PrepareAbort
// under transaction version 1 rules (the epoch stays) and, once that
// record is committed, hands its markers to the driver. reply gets the
// outcome of the append.
func (s *shard) prepareEnd(m *txnMetadata, commit bool, now time.Time, eff *effects, reply func(code int16)) int16 {
	return s.prepareEndFrom(m, m.state, m.snapshot, endPlan{commit: commit, tv: TV0, nextProducerID: noProducerID}, now, eff, reply)
}

// endPlan is how a transaction ends: the outcome, the transaction version
// of the request (TV2 bumps the epoch, Kafka's prepareAbortOrCommit), the
// producer id a TV2 bump to the last epoch moves to, and whether no
// partition was added (a TV2 abort from a completed state, whose start
// time is then the abort's).
type endPlan struct {
	commit           bool
	tv               int16
	nextProducerID   int64
	noPartitionAdded bool
}

func (s *shard) prepareEndFrom(m *txnMetadata, fromState State, from snapshot, p endPlan, now time.Time, eff *effects, reply func(code int16)) int16 {
	t := from
	t.state = StatePrepareAbort
	if p.commit {
		t.state = StatePrepareCommit
	}
	t.lastUpdateMs = now.UnixMilli()
	t.clientTV = p.tv
	t.nextProducerID = p.nextProducerID
	if p.tv >= TV2 {
		// An abort at MaxInt16 (only after a bug) goes through without
		// overflowing, so that the id can recover, as in Kafka.
		if !(from.epoch == math.MaxInt16 && !p.commit) {
			t.epoch = from.epoch + 1
		}
		t.lastEpoch = from.epoch
	}
	if p.noPartitionAdded {
		t.startMs = t.lastUpdateMs
	}
	return s.transitionFrom(m, fromState, t, eff, func(s *shard, err error, _ time.Time, eff *effects) {
		if err != nil {
			reply(appendErrorCode(err))
			return
		}
		eff.markers = append(eff.markers, s.markersFor(m))
		reply(0)
	})
}

// fenceAndAbort bumps the epoch of an ongoing transaction, fencing its
// producer, and aborts it (Kafka's prepareFenceProducerEpoch followed by
// an abort that is not from the client). Only the PrepareAbort record
// with the bumped epoch is written: PrepareEpochFence is a step that is
// checked but never stored, and the id shows Ongoing until the abort is
// committed. A transaction of a TV2 client is aborted under TV2 rules, so
// its markers carry one bump more than the fence (Kafka bumps twice too).
func (s *shard) fenceAndAbort(m *txnMetadata, now time.Time, eff *effects, reply func(code int16)) int16 {
	if m.epoch == math.MaxInt16 {
		return kerr.UnknownServerError.Code
	}
	fence := m.snapshot
	if !m.fenceFailed {
		fence.epoch++
	}
	fence.lastEpoch = noProducerEpoch
	fence.state = StatePrepareEpochFence
	if !validTransition(m.state, fence.state) {
		return kerr.InvalidTxnState.Code
	}
	plan := endPlan{tv: m.clientTV, nextProducerID: noProducerID}
	return s.prepareEndFrom(m, fence.state, fence, plan, now, eff, func(code int16) {
		if code != 0 {
			// Kafka keeps the bumped epoch after a failed fence so that the
			// old producer stays fenced, and does not bump it again.
			m.epoch, m.lastEpoch, m.fenceFailed = fence.epoch, noProducerEpoch, true
		} else {
			m.fenceFailed = false
		}
		reply(code)
	})
}

// tick aborts transactions that ran past their timeout, as Kafka's
// abortTimedOutTransactions does every
// transaction.abort.timed.out.transaction.cleanup.interval.ms, and, when
// expire is set, removes ids idle for transactional.id.expiration.ms.
func (s *shard) tick(now time.Time, expire bool, eff *effects) {
	nowMs := now.UnixMilli()
	for _, m := range s.sorted() {
		if m.pending {
			continue
		}
		switch {
		case m.state == StateOngoing && m.startMs+int64(m.timeoutMs) < nowMs:
			s.fenceAndAbort(m, now, eff, func(int16) {})
		case expire && m.state.completed() && m.lastUpdateMs+s.limits.idExpirationMs <= nowMs:
			s.expireID(m, eff)
		}
	}
}

// expireID writes the id's tombstone and forgets it once committed.
func (s *shard) expireID(m *txnMetadata, eff *effects) {
	t := m.snapshot
	t.state = StateDead
	if !validTransition(m.state, t.state) {
		return
	}
	m.pending = true
	eff.writes = append(eff.writes, write{
		record: tombstone(m.id),
		done: func(s *shard, err error, _ time.Time, _ *effects) {
			m.pending = false
			if err == nil && s.txns[m.id] == m {
				delete(s.txns, m.id)
			}
		},
	})
}

// completeTxn writes CompleteCommit or CompleteAbort once every marker of
// job is written. It reports false when the transaction moved on (a newer
// coordinator epoch, a fenced producer), and nothing is written.
func (s *shard) completeTxn(job MarkerJob, now time.Time, eff *effects, notify chan error) bool {
	m := s.txns[job.TransactionalID]
	want := StatePrepareAbort
	if job.Commit {
		want = StatePrepareCommit
	}
	if m == nil || m.pending || m.state != want || m.producerID != job.ProducerID || m.epoch != job.ProducerEpoch {
		return false
	}
	t := m.snapshot
	t.state = StateCompleteAbort
	if job.Commit {
		t.state = StateCompleteCommit
	}
	t.partitions = nil
	t.lastUpdateMs = now.UnixMilli()
	if t.clientTV >= TV2 && t.nextProducerID >= 0 {
		// The bump reached the last epoch: the id moves on, and the old
		// one is remembered so that a retried EndTxn is recognised.
		t.lastProducerID, t.producerID, t.epoch = m.producerID, t.nextProducerID, 0
	}
	t.nextProducerID = noProducerID
	if s.transition(m, t, eff, nil) != 0 {
		return false
	}
	eff.writes[len(eff.writes)-1].notify = notify
	return true
}

// resumeMarkers hands the driver the markers of every transaction that a
// previous coordinator left prepared, so that a failover completes them.
func (s *shard) resumeMarkers(eff *effects) {
	for _, m := range s.sorted() {
		if m.state == StatePrepareCommit || m.state == StatePrepareAbort {
			eff.markers = append(eff.markers, s.markersFor(m))
		}
	}
}

// sorted is the shard's ids in order, so that the records and markers a
// pass over them queues come in the same order every time (the
// simulation replays from its seed).
func (s *shard) sorted() []*txnMetadata {
	out := make([]*txnMetadata, 0, len(s.txns))
	for _, m := range s.txns {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *txnMetadata) int { return strings.Compare(a.id, b.id) })
	return out
}
