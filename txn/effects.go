package txn

import "time"

// record is one key/value for __transaction_state; a nil value is a
// tombstone.
type record struct {
	key, value []byte
}

// write asks the driver to append one record to the shard's partition.
// done runs under the shard lock once the append is acknowledged (acks=all)
// or failed.
type write struct {
	record record
	done   func(s *shard, err error, now time.Time, eff *effects)
	// notify, if set, receives the append's error after done ran.
	notify chan error
}

// MarkerJob is one transaction whose markers the driver must write: a
// COMMIT or ABORT control batch on every partition of the transaction,
// through WriteTxnMarkers to each partition's leader.
type MarkerJob struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
	Partitions      []TopicPartition
	// CoordinatorEpoch is the leader epoch of the __transaction_state
	// partition; partition leaders refuse markers from an older one.
	CoordinatorEpoch int32
	// TransactionVersion is the client's (WriteTxnMarkers v2): at 2 the
	// leaders require the marker's epoch to be above the producer's.
	TransactionVersion int8
}

// effects collect what a step wants done outside the shard lock: appends,
// markers to send, and answers to waiting requests.
type effects struct {
	writes  []write
	markers []MarkerJob
	replies []func()
}

// reply queues an answer; replies run after the lock is released.
func (e *effects) reply(fn func()) {
	if fn != nil {
		e.replies = append(e.replies, fn)
	}
}

func (e *effects) deliver() {
	for _, fn := range e.replies {
		fn()
	}
	e.replies = nil
}
