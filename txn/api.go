package txn

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// InitResult answers InitProducerId.
type InitResult struct {
	Err           int16
	ProducerID    int64
	ProducerEpoch int16
}

// initArgs is one InitProducerId with a transactional id.
type initArgs struct {
	txnID     string
	timeoutMs int32
	// expectedID and expectedEpoch are the KIP-360 fields (v3+): the
	// producer's current id and epoch when it recovers, or -1 and -1.
	expectedID    int64
	expectedEpoch int16
	// newProducerID is an id the driver allocated for this call, or -1.
	newProducerID int64
	reply         func(InitResult)
}

func (a initArgs) hasExpected() bool { return a.expectedID != noProducerID }

// initProducerID is Kafka's TransactionCoordinator.handleInitProducerId. It
// returns true, having done nothing, when it needs a fresh producer id
// (a new transactional id, or an exhausted epoch): the driver allocates one
// outside the lock and steps again with it.
func (s *shard) initProducerID(a initArgs, now time.Time, eff *effects) (needID bool) {
	fail := func(code int16) {
		eff.reply(func() { a.reply(InitResult{Err: code, ProducerID: -1, ProducerEpoch: -1}) })
	}
	if a.txnID == "" {
		fail(kerr.InvalidRequest.Code)
		return false
	}
	if a.timeoutMs <= 0 || a.timeoutMs > s.limits.maxTimeoutMs {
		fail(kerr.InvalidTransactionTimeout.Code)
		return false
	}
	if (a.expectedID == noProducerID) != (a.expectedEpoch == noProducerEpoch) {
		fail(kerr.InvalidRequest.Code)
		return false
	}
	nowMs := now.UnixMilli()
	m := s.txns[a.txnID]
	if m == nil {
		if a.newProducerID < 0 {
			return true
		}
		m = &txnMetadata{id: a.txnID, snapshot: snapshot{
			producerID: a.newProducerID, lastProducerID: noProducerID,
			epoch: noProducerEpoch, lastEpoch: noProducerEpoch,
			timeoutMs: a.timeoutMs, state: StateEmpty,
			startMs: noTimestamp, lastUpdateMs: nowMs, nextProducerID: noProducerID,
		}}
		s.txns[a.txnID] = m
		a.newProducerID = -1
	}
	if m.pending {
		fail(kerr.ConcurrentTransactions.Code)
		return false
	}
	if a.hasExpected() && !validExpectedProducer(m, a.expectedID, a.expectedEpoch) {
		fail(kerr.ProducerFenced.Code)
		return false
	}
	switch {
	case m.state == StatePrepareCommit || m.state == StatePrepareAbort:
		fail(kerr.ConcurrentTransactions.Code)
		return false
	case m.state == StateOngoing && s.limits.faults.InitForgetsOngoing:
		// The reverted fix: the epoch is bumped below as if the id were
		// idle, and the transaction is never aborted.
	case m.state == StateOngoing:
		// The previous producer's transaction is aborted under a bumped
		// epoch; the client retries once the abort completes.
		if code := s.fenceAndAbort(m, now, eff, func(code int16) {
			if code == 0 {
				code = kerr.ConcurrentTransactions.Code
			}
			// Runs within the append's completion: the reply channel has
			// room for its one answer.
			a.reply(InitResult{Err: code, ProducerID: -1, ProducerEpoch: -1})
		}); code != 0 {
			fail(code)
		}
		return false
	case !m.state.completed():
		fail(kerr.UnknownServerError.Code)
		return false
	}
	t := m.snapshot
	t.state, t.timeoutMs, t.partitions, t.startMs, t.lastUpdateMs = StateEmpty, a.timeoutMs, nil, noTimestamp, nowMs
	if epochExhausted(m.epoch) && (!a.hasExpected() || a.expectedEpoch == m.epoch) {
		// Kafka's prepareProducerIdRotation: a new id at epoch 0,
		// remembering the old one so that a retry of this call is
		// recognised (KIP-360).
		if a.newProducerID < 0 {
			return true
		}
		t.lastProducerID, t.producerID, t.epoch = m.producerID, a.newProducerID, 0
		t.lastEpoch = noProducerEpoch
		if a.hasExpected() {
			t.lastEpoch = m.epoch
		}
	} else {
		// Kafka's prepareIncrementProducerEpoch.
		switch {
		case !a.hasExpected():
			t.epoch, t.lastEpoch = m.epoch+1, noProducerEpoch
		case m.epoch == noProducerEpoch || a.expectedEpoch == m.epoch:
			t.epoch, t.lastEpoch = m.epoch+1, m.epoch
		case m.lastEpoch != noProducerEpoch && a.expectedEpoch == m.lastEpoch:
			// A retry of a bump whose answer was lost: same epoch again.
		default:
			fail(kerr.ProducerFenced.Code)
			return false
		}
	}
	from := m.state
	if s.limits.faults.InitForgetsOngoing {
		from = StateEmpty
	}
	if code := s.transitionFrom(m, from, t, eff, func(_ *shard, err error, _ time.Time, eff *effects) {
		r := InitResult{ProducerID: t.producerID, ProducerEpoch: t.epoch}
		if err != nil {
			r = InitResult{Err: appendErrorCode(err), ProducerID: -1, ProducerEpoch: -1}
		}
		eff.reply(func() { a.reply(r) })
	}); code != 0 {
		fail(code)
	}
	return false
}

// validExpectedProducer is Kafka's isValidProducerId check of the KIP-360
// fields: the id must be the current one (its epoch is checked when bumped),
// or the previous one with an exhausted epoch (a retry after a rotation),
// unless the id was just created and has no epoch yet.
func validExpectedProducer(m *txnMetadata, id int64, epoch int16) bool {
	return m.epoch == noProducerEpoch ||
		id == m.producerID ||
		(id == m.lastProducerID && epochExhausted(epoch))
}

// producerCheck is the common check of requests within a transaction:
// the id must exist and be held by this producer id and epoch.
func (s *shard) producerCheck(txnID string, producerID int64, epoch int16) (*txnMetadata, int16) {
	if txnID == "" {
		return nil, kerr.InvalidRequest.Code
	}
	m := s.txns[txnID]
	switch {
	case m == nil || m.producerID != producerID:
		return nil, kerr.InvalidProducerIDMapping.Code
	case m.epoch != epoch:
		return nil, kerr.ProducerFenced.Code
	case m.pending, m.state == StatePrepareCommit, m.state == StatePrepareAbort:
		return nil, kerr.ConcurrentTransactions.Code
	}
	return m, 0
}

// addPartitions is Kafka's handleAddPartitionsToTransaction (also used for
// AddOffsetsToTxn with the group's __consumer_offsets partition, and for
// the partitions a leader adds for a TV2 producer). tv is the client's
// transaction version, which the transaction records. reply gets one code
// for all partitions.
func (s *shard) addPartitions(txnID string, producerID int64, epoch int16, tps []TopicPartition, tv int16, now time.Time, eff *effects, reply func(int16)) {
	answer := func(code int16) { eff.reply(func() { reply(code) }) }
	m, code := s.producerCheck(txnID, producerID, epoch)
	if code != 0 {
		answer(code)
		return
	}
	if m.state == StateOngoing && !slices.ContainsFunc(tps, func(tp TopicPartition) bool { return !m.hasPartition(tp) }) {
		answer(0)
		return
	}
	t := m.snapshot
	t.state = StateOngoing
	t.clientTV = tv
	t.partitions = m.withPartitions(tps)
	t.lastUpdateMs = now.UnixMilli()
	if m.state.completed() {
		t.startMs = t.lastUpdateMs
	}
	if code := s.transition(m, t, eff, func(_ *shard, err error, _ time.Time, eff *effects) {
		code := int16(0)
		if err != nil {
			code = appendErrorCode(err)
		}
		eff.reply(func() { reply(code) })
	}); code != 0 {
		answer(code)
	}
}

// verifyPartitions answers AddPartitionsToTxn v4+ with verify_only, which
// partition leaders send (KIP-890 part 1): whether each partition is in the
// ongoing transaction. Nothing changes.
func (s *shard) verifyPartitions(txnID string, producerID int64, epoch int16, tps []TopicPartition) map[TopicPartition]int16 {
	out := make(map[TopicPartition]int16, len(tps))
	m, code := s.producerCheck(txnID, producerID, epoch)
	for _, tp := range tps {
		switch {
		case code != 0:
			out[tp] = code
		case m.state == StateOngoing && m.hasPartition(tp):
			out[tp] = 0
		default:
			out[tp] = kerr.InvalidTxnState.Code
		}
	}
	return out
}

// endTxn is Kafka's handleEndTransaction for a client's EndTxn.
func (s *shard) endTxn(txnID string, producerID int64, epoch int16, commit bool, now time.Time, eff *effects, reply func(int16)) {
	answer := func(code int16) { eff.reply(func() { reply(code) }) }
	if txnID == "" {
		answer(kerr.InvalidRequest.Code)
		return
	}
	m := s.txns[txnID]
	switch {
	case m == nil || m.producerID != producerID:
		answer(kerr.InvalidProducerIDMapping.Code)
		return
	case m.epoch != epoch:
		answer(kerr.ProducerFenced.Code)
		return
	case m.pending:
		answer(kerr.ConcurrentTransactions.Code)
		return
	}
	// A retried EndTxn of a transaction that already ended the same way
	// succeeds, or waits while its markers are written; the other outcome
	// is a client bug.
	switch m.state {
	case StateOngoing:
		if code := s.prepareEnd(m, commit, now, eff, reply); code != 0 {
			answer(code)
		}
	case StateCompleteCommit:
		answer(codeIf(commit, 0, kerr.InvalidTxnState.Code))
	case StateCompleteAbort:
		answer(codeIf(!commit, 0, kerr.InvalidTxnState.Code))
	case StatePrepareCommit:
		answer(codeIf(commit, kerr.ConcurrentTransactions.Code, kerr.InvalidTxnState.Code))
	case StatePrepareAbort:
		answer(codeIf(!commit, kerr.ConcurrentTransactions.Code, kerr.InvalidTxnState.Code))
	case StateEmpty:
		answer(kerr.InvalidTxnState.Code)
	default:
		answer(kerr.UnknownServerError.Code)
	}
}

func codeIf(cond bool, yes, no int16) int16 {
	if cond {
		return yes
	}
	return no
}

// Description is one transactional id as DescribeTransactions shows it.
type Description struct {
	Err             int16
	TransactionalID string
	State           string
	TimeoutMs       int32
	StartTimeMs     int64
	ProducerID      int64
	ProducerEpoch   int16
	Partitions      []TopicPartition
}

func (s *shard) describe(txnID string) Description {
	m := s.txns[txnID]
	if m == nil {
		return Description{Err: kerr.TransactionalIDNotFound.Code, TransactionalID: txnID, ProducerID: -1, ProducerEpoch: -1, StartTimeMs: -1}
	}
	return Description{
		TransactionalID: txnID, State: m.state.String(), TimeoutMs: m.timeoutMs, StartTimeMs: m.startMs,
		ProducerID: m.producerID, ProducerEpoch: m.epoch, Partitions: slices.Clone(m.partitions),
	}
}

// Listing is one transactional id as ListTransactions shows it.
type Listing struct {
	TransactionalID string
	ProducerID      int64
	State           string
}

// ListFilter selects ids for ListTransactions; empty filters match all.
type ListFilter struct {
	States      []State
	ProducerIDs []int64
	// MinDurationMs, when >= 0 (v1+), keeps only transactions running
	// longer than this.
	MinDurationMs int64
}

func (s *shard) list(f ListFilter, now time.Time, out []Listing) []Listing {
	nowMs := now.UnixMilli()
	for _, m := range s.txns {
		switch {
		case len(f.States) > 0 && !slices.Contains(f.States, m.state):
		case len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, m.producerID):
		case f.MinDurationMs >= 0 && (m.startMs < 0 || nowMs-m.startMs <= f.MinDurationMs):
		default:
			out = append(out, Listing{TransactionalID: m.id, ProducerID: m.producerID, State: m.state.String()})
		}
	}
	return out
}
