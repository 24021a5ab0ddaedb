package log

import (
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/brook-mq/brook/protocol/batch"
)

// producerBatchesToRetain is how many recent batches per producer are kept
// for duplicate detection (Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN,
// which matches max.in.flight.requests.per.connection=5).
const producerBatchesToRetain = 5

// producerBatch describes one appended batch of an idempotent producer.
type producerBatch struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	Timestamp               int64 // the batch's max timestamp
}

// producerEntry is what the log remembers of one producer id.
type producerEntry struct {
	Epoch         int16
	Batches       []producerBatch // oldest first, at most producerBatchesToRetain
	LastTimestamp int64
	// CurrentTxnFirstOffset is the first offset of the producer's open
	// transaction in this partition, -1 when none.
	CurrentTxnFirstOffset int64
	// CoordinatorEpoch is that of the last marker written, -1 before any.
	CoordinatorEpoch int32
}

func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{Epoch: epoch, CurrentTxnFirstOffset: -1, CoordinatorEpoch: -1}
}

// completedTxn is a transaction ended by a marker at LastOffset.
type completedTxn struct {
	ProducerID              int64
	FirstOffset, LastOffset int64
	Aborted                 bool
}

// producerState is the idempotence state of one partition, guarded by the
// Log's appendMu (only writers use it).
type producerState struct {
	producers map[int64]*producerEntry
}

func newProducerState() *producerState {
	return &producerState{producers: map[int64]*producerEntry{}}
}

// inSequence mirrors Kafka: the next sequence follows the last, wrapping at MaxInt32.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// checkClient applies Kafka's ProducerAppendInfo rules to a batch from a
// client. It returns the original batch when h duplicates one of the last
// five, ErrInvalidProducerEpoch for a fenced (older) epoch,
// ErrOutOfOrderSequence for a gap or a new epoch not starting at 0, and
// ErrInvalidTxnState for a non-transactional batch while the producer's
// transaction is open. An unknown producer id is accepted with any
// sequence, as Kafka does since the log may have lost its state to
// retention.
func (ps *producerState) checkClient(h *batch.Header) (*producerBatch, error) {
	e := ps.producers[h.ProducerID]
	if e == nil {
		return nil, nil
	}
	dup, err := ps.checkSequence(e, h)
	if err != nil || dup != nil {
		return dup, err
	}
	if e.CurrentTxnFirstOffset >= 0 && !h.Transactional() {
		return nil, fmt.Errorf("%w: producer %d has a transaction open since offset %d; expected a transactional batch", ErrInvalidTxnState, h.ProducerID, e.CurrentTxnFirstOffset)
	}
	return nil, nil
}

// checkCoordinator applies to a batch a coordinator writes for a producer
// the rules Kafka keeps for AppendOrigin.COORDINATOR: only the epoch
// (ErrInvalidProducerEpoch for an older one) and the transaction state;
// the coordinator's sequences are not the producer's, so none is checked
// and nothing is a duplicate.
func (ps *producerState) checkCoordinator(h *batch.Header) (*producerBatch, error) {
	e := ps.producers[h.ProducerID]
	if e == nil {
		return nil, nil
	}
	if h.ProducerEpoch < e.Epoch {
		return nil, fmt.Errorf("%w: producer %d epoch %d is older than current %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.Epoch)
	}
	if e.CurrentTxnFirstOffset >= 0 && !h.Transactional() {
		return nil, fmt.Errorf("%w: producer %d has a transaction open since offset %d; expected a transactional batch", ErrInvalidTxnState, h.ProducerID, e.CurrentTxnFirstOffset)
	}
	return nil, nil
}

// checkMarker applies Kafka's rules for an end-transaction marker written
// for a coordinator: an older producer epoch than the partition's is
// ErrInvalidProducerEpoch, an older coordinator epoch than that of the last
// marker is ErrTransactionCoordinatorFenced. A transaction version 2
// coordinator bumps the epoch before writing markers, so its marker must
// be above the producer's epoch: one at that epoch is late (it belongs to
// the previous transaction) and fenced, unless no transaction is open,
// when it is a retry of a marker already written and is written again
// (Kafka's ProducerAppendInfo, KAFKA-19999). Followers and recovery do not
// check (Kafka only logs for replicated markers).
func (ps *producerState) checkMarker(m TxnMarker) error {
	e := ps.producers[m.ProducerID]
	if e == nil {
		return nil
	}
	stale := m.ProducerEpoch < e.Epoch
	if m.TransactionVersion >= 2 && m.ProducerEpoch == e.Epoch && e.CurrentTxnFirstOffset >= 0 {
		stale = true
	}
	if stale {
		return fmt.Errorf("%w: marker (transaction version %d) for producer %d has epoch %d, current %d", ErrInvalidProducerEpoch, m.TransactionVersion, m.ProducerID, m.ProducerEpoch, e.Epoch)
	}
	if m.CoordinatorEpoch < e.CoordinatorEpoch {
		return fmt.Errorf("%w: marker for producer %d from coordinator epoch %d, the partition has seen %d", ErrTransactionCoordinatorFenced, m.ProducerID, m.CoordinatorEpoch, e.CoordinatorEpoch)
	}
	return nil
}

func (ps *producerState) checkSequence(e *producerEntry, h *batch.Header) (*producerBatch, error) {
	if h.ProducerEpoch == e.Epoch {
		last := h.LastSequence()
		for i := range e.Batches {
			if e.Batches[i].FirstSeq == h.BaseSequence && e.Batches[i].LastSeq == last {
				b := e.Batches[i]
				return &b, nil
			}
		}
	}
	if h.ProducerEpoch < e.Epoch {
		return nil, fmt.Errorf("%w: producer %d epoch %d is older than current %d", ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.Epoch)
	}
	if h.ProducerEpoch != e.Epoch {
		if h.BaseSequence != 0 && e.Epoch != batch.NoProducerID {
			return nil, fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return nil, nil
	}
	n := len(e.Batches)
	if n == 0 {
		// Only a marker was written at this epoch: as Kafka, accept any
		// sequence, the next one being unknown.
		return nil, nil
	}
	lastSeq := e.Batches[n-1].LastSeq
	if e.Epoch != batch.NoProducerID && !inSequence(lastSeq, h.BaseSequence) {
		return nil, fmt.Errorf("%w: producer %d epoch %d expected sequence %d, got %d", ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, int64(lastSeq)+1, h.BaseSequence)
	}
	return nil, nil
}

// update records an appended batch (leader, follower and recovery alike)
// and reports its effect on transactions: began when a transactional batch
// opened the producer's transaction; done when marker (the decoded marker
// of a control batch, nil for data batches and unknown control types)
// closed one. A marker for a producer with no open transaction is recorded
// (epochs, timestamp) and closes nothing, as in Kafka.
func (ps *producerState) update(h *batch.Header, marker *TxnMarker) (began bool, done *completedTxn) {
	if !h.HasProducerID() {
		return false, nil
	}
	e := ps.producers[h.ProducerID]
	if e == nil {
		e = newProducerEntry(h.ProducerEpoch)
		ps.producers[h.ProducerID] = e
	}
	if h.ProducerEpoch != e.Epoch {
		e.Epoch = h.ProducerEpoch
		e.Batches = e.Batches[:0]
	}
	if h.Control() {
		e.LastTimestamp = h.MaxTimestamp
		if marker == nil {
			return false, nil
		}
		if e.CurrentTxnFirstOffset >= 0 {
			done = &completedTxn{ProducerID: h.ProducerID, FirstOffset: e.CurrentTxnFirstOffset, LastOffset: h.BaseOffset, Aborted: !marker.Commit}
		}
		e.CurrentTxnFirstOffset = -1
		e.CoordinatorEpoch = marker.CoordinatorEpoch
		return false, done
	}
	if h.Transactional() && e.CurrentTxnFirstOffset < 0 {
		e.CurrentTxnFirstOffset = h.BaseOffset
		began = true
	}
	if len(e.Batches) == producerBatchesToRetain {
		copy(e.Batches, e.Batches[1:])
		e.Batches = e.Batches[:producerBatchesToRetain-1]
	}
	e.Batches = append(e.Batches, producerBatch{
		FirstSeq: h.BaseSequence, LastSeq: h.LastSequence(),
		FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(), Timestamp: h.MaxTimestamp,
	})
	e.LastTimestamp = h.MaxTimestamp
	return began, nil
}

// removeExpired forgets producers whose last batch timestamp is at least
// expirationMs old (Kafka's producer.id.expiration.ms, which also judges
// by the batch timestamp, not by arrival time), except those with an open
// transaction, which only a marker ends.
func (ps *producerState) removeExpired(nowMs, expirationMs int64) int {
	n := 0
	for id, e := range ps.producers {
		if e.CurrentTxnFirstOffset < 0 && nowMs-e.LastTimestamp >= expirationMs {
			delete(ps.producers, id)
			n++
		}
	}
	return n
}

// listSnapshots returns the offsets of the .snapshot files in dir, ascending.
func listSnapshots(fs FS, dir string) ([]int64, error) {
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list snapshots in %s: %w", dir, err)
	}
	return snapshotOffsets(ents), nil
}

// snapshotOffsets returns the offsets of the .snapshot files among a
// directory's entries, ascending.
func snapshotOffsets(ents []os.DirEntry) []int64 {
	var out []int64
	for _, e := range ents {
		if o, ok := parseOffsetFileName(e.Name(), snapshotSuffix); ok {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
