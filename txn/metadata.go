package txn

import (
	"cmp"
	"math"
	"slices"
)

// TopicPartition names one partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func compareTP(a, b TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// Kafka's "none" values for ids and epochs (RecordBatch.NO_PRODUCER_ID,
// NO_PRODUCER_EPOCH) and timestamps.
const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
	noTimestamp     int64 = -1
)

// epochExhausted is Kafka's TransactionMetadata.isEpochExhausted: the last
// epoch a producer id can be bumped to is MaxInt16-1, because a fence must
// still be able to bump once more.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// snapshot is the persistent part of a transactional id's state: what its
// __transaction_state record holds, and what a transition moves to
// (Kafka's TxnTransitMetadata).
type snapshot struct {
	producerID     int64
	lastProducerID int64
	epoch          int16
	lastEpoch      int16
	timeoutMs      int32
	state          State
	partitions     []TopicPartition // sorted, no duplicates
	startMs        int64            // txnStartTimestamp, -1 when none
	lastUpdateMs   int64
	// nextProducerID is the id a TV2 EndTxn allocated when its bump
	// reached the last epoch: the markers are written with the old id at
	// MaxInt16, and the id moves to this one at epoch 0 on completion
	// (Kafka's nextProducerId). -1 otherwise.
	nextProducerID int64
	// clientTV is the transaction version of the request that last
	// started or ended the transaction (Kafka's clientTransactionVersion):
	// TV2 bumps the epoch at every end and sends markers with it.
	clientTV int16
}

// Transaction versions (Kafka's transaction.version feature levels). TV1
// only changes the __transaction_state record to its flexible v1; TV2
// bumps the epoch per transaction and lets partition leaders add
// partitions (KIP-890 part 2). A request's version says which one its
// client speaks: AddPartitionsToTxn v4+ and EndTxn v5+ are TV2.
const (
	TV0 int16 = 0
	TV1 int16 = 1
	TV2 int16 = 2
)

// txnMetadata is one transactional id as its coordinator holds it.
//
// Invariant: while pending is true a record of a transition of this id is
// being appended and no other transition may start; the id's requests get
// CONCURRENT_TRANSACTIONS (Kafka's pendingTransitionInProgress).
type txnMetadata struct {
	id string
	snapshot
	pending bool
	// fenceFailed is Kafka's hasFailedEpochFence: a fence whose record
	// failed already bumped the in-memory epoch, and the retry must not
	// bump it again, so that the epoch the old producer is fenced with is
	// never one a client was given.
	fenceFailed bool
}

func (m *txnMetadata) hasPartition(tp TopicPartition) bool {
	_, found := slices.BinarySearchFunc(m.partitions, tp, compareTP)
	return found
}

// withPartitions returns the sorted union of m's partitions and tps.
func (m *txnMetadata) withPartitions(tps []TopicPartition) []TopicPartition {
	out := slices.Clone(m.partitions)
	for _, tp := range tps {
		if i, found := slices.BinarySearchFunc(out, tp, compareTP); !found {
			out = slices.Insert(out, i, tp)
		}
	}
	return out
}
