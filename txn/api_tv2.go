package txn

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// EndResult answers EndTxn. From v5 the answer carries the producer id and
// epoch the producer continues with: under transaction version 2 every
// EndTxn bumps the epoch, and the one that reaches the last epoch moves
// the transactional id to a new producer id.
type EndResult struct {
	Err           int16
	ProducerID    int64
	ProducerEpoch int16
}

func endFailed(code int16) EndResult {
	return EndResult{Err: code, ProducerID: noProducerID, ProducerEpoch: noProducerEpoch}
}

// endArgs is one EndTxn.
type endArgs struct {
	txnID      string
	producerID int64
	epoch      int16
	commit     bool
	tv         int16 // TV2 for EndTxn v5+
	// newProducerID is an id the driver allocated for this call, or -1.
	newProducerID int64
	reply         func(EndResult)
}

// endTxnV2 is Kafka's endTransaction for a client of transaction version
// 2 (EndTxn v5+). The producer's epoch must be the current one, except in
// a retry: the producer still holds the epoch before the bump
// (retryOnEpochBump), or, after a bump to the last epoch moved the id on,
// the old id at MaxInt16-1 (retryOnOverflow). A retry of an ended
// transaction succeeds with the current id and epoch and writes nothing;
// a retry while its markers are written waits (CONCURRENT_TRANSACTIONS).
// An abort is allowed from a completed state (the producer cannot know
// whether a leader added a partition for it); a commit there is
// INVALID_TXN_STATE. Kafka's table:
//
//	               Abort           Commit
//	               Retry  Current  Retry  Current
//	Empty          PF     EB       PF     ITS
//	CompleteAbort  NONE   EB       ITS    ITS
//	CompleteCommit ITS    EB       NONE   ITS
//
// It returns true, having done nothing, when the bump needs a fresh
// producer id (the epoch is exhausted): the driver allocates one outside
// the lock and steps again with it.
func (s *shard) endTxnV2(a endArgs, now time.Time, eff *effects) (needID bool) {
	fail := func(code int16) { eff.reply(func() { a.reply(endFailed(code)) }) }
	if a.txnID == "" {
		fail(kerr.InvalidRequest.Code)
		return false
	}
	m := s.txns[a.txnID]
	if m == nil {
		fail(kerr.InvalidProducerIDMapping.Code)
		return false
	}
	retryOnOverflow := m.lastProducerID == a.producerID && a.epoch == math.MaxInt16-1 && m.epoch == 0
	retryOnEpochBump := m.producerID == a.producerID && int32(m.epoch) == int32(a.epoch)+1
	isRetry := retryOnEpochBump || retryOnOverflow
	validEpoch := a.epoch == m.epoch
	switch m.state {
	case StatePrepareCommit, StatePrepareAbort:
		validEpoch = retryOnEpochBump
	case StateCompleteCommit, StateCompleteAbort:
		validEpoch = validEpoch || isRetry
	}
	switch {
	case m.producerID != a.producerID && !retryOnOverflow:
		fail(kerr.InvalidProducerIDMapping.Code)
		return false
	case !validEpoch:
		fail(kerr.ProducerFenced.Code)
		return false
	case m.pending:
		fail(kerr.ConcurrentTransactions.Code)
		return false
	}
	current := func() {
		r := EndResult{ProducerID: m.producerID, ProducerEpoch: m.epoch}
		eff.reply(func() { a.reply(r) })
	}
	switch {
	case m.state == StateOngoing:
		return s.prepareEndV2(m, a, false, now, eff)
	case m.state == StateCompleteCommit && a.commit, m.state == StateCompleteAbort && !a.commit:
		if isRetry {
			current()
			return false
		}
		if !a.commit {
			return s.prepareEndV2(m, a, true, now, eff)
		}
		fail(kerr.InvalidTxnState.Code)
	case m.state == StateCompleteCommit && !a.commit && !isRetry, m.state == StateEmpty && !a.commit:
		return s.prepareEndV2(m, a, true, now, eff)
	case m.state == StatePrepareCommit && a.commit, m.state == StatePrepareAbort && !a.commit:
		fail(kerr.ConcurrentTransactions.Code)
	case m.state.completed(), m.state == StatePrepareCommit, m.state == StatePrepareAbort:
		fail(kerr.InvalidTxnState.Code)
	default:
		fail(kerr.UnknownServerError.Code)
	}
	return false
}

// prepareEndV2 writes the bumped PrepareCommit or PrepareAbort and
// answers with the epoch (or, past the last one, the producer id) the
// producer goes on with.
func (s *shard) prepareEndV2(m *txnMetadata, a endArgs, noPartitionAdded bool, now time.Time, eff *effects) (needID bool) {
	next := noProducerID
	if epochExhausted(m.epoch) {
		if a.newProducerID < 0 {
			return true
		}
		next = a.newProducerID
	}
	plan := endPlan{commit: a.commit, tv: a.tv, nextProducerID: next, noPartitionAdded: noPartitionAdded}
	code := s.prepareEndFrom(m, m.state, m.snapshot, plan, now, eff, func(code int16) {
		r := endFailed(code)
		switch {
		case code != 0:
		case m.nextProducerID >= 0:
			// Markers go out with the old id at MaxInt16; the client
			// never sees that epoch, only the new id at 0.
			r = EndResult{ProducerID: m.nextProducerID, ProducerEpoch: 0}
		default:
			r = EndResult{ProducerID: m.producerID, ProducerEpoch: m.epoch}
		}
		// Runs within the append's completion: the reply channel has
		// room for its one answer.
		a.reply(r)
	})
	if code != 0 {
		eff.reply(func() { a.reply(endFailed(code)) })
	}
	return false
}
