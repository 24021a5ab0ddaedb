package log

import "errors"

// Sentinel errors. Callers map them to Kafka error codes; errors from
// protocol/batch are wrapped, so errors.Is works for both.
var (
	// ErrOffsetOutOfRange: OFFSET_OUT_OF_RANGE (1).
	ErrOffsetOutOfRange = errors.New("log: offset out of range")
	// ErrOutOfOrderSequence: OUT_OF_ORDER_SEQUENCE_NUMBER (45).
	ErrOutOfOrderSequence = errors.New("log: out of order sequence number")
	// ErrInvalidProducerEpoch: INVALID_PRODUCER_EPOCH (47).
	ErrInvalidProducerEpoch = errors.New("log: invalid producer epoch")
	// ErrInvalidTxnState: INVALID_TXN_STATE (48), a non-transactional
	// batch from a producer whose transaction is open.
	ErrInvalidTxnState = errors.New("log: invalid transaction state")
	// ErrTransactionCoordinatorFenced: TRANSACTION_COORDINATOR_FENCED (52),
	// a marker from an older coordinator epoch than the partition has seen.
	ErrTransactionCoordinatorFenced = errors.New("log: transaction coordinator fenced")
	// ErrMessageTooLarge: MESSAGE_TOO_LARGE (10), a batch above max.message.bytes.
	ErrMessageTooLarge = errors.New("log: message too large")
	// ErrRecordListTooLarge: RECORD_LIST_TOO_LARGE (18), a batch that cannot
	// fit in one segment (larger than segment.bytes).
	ErrRecordListTooLarge = errors.New("log: record batch larger than segment.bytes")
	// ErrCorrupt: CORRUPT_MESSAGE (2) on append; on disk it marks data that
	// recovery truncates.
	ErrCorrupt = errors.New("log: corrupt")
	// ErrInvalidRecord: INVALID_RECORD (87).
	ErrInvalidRecord = errors.New("log: invalid record")
	// ErrClosed: the log or manager was closed.
	ErrClosed = errors.New("log: closed")
	// ErrInconsistentTopicID: INCONSISTENT_TOPIC_ID (103), the partition
	// directory belongs to another incarnation of the topic.
	ErrInconsistentTopicID = errors.New("log: inconsistent topic id")
	// ErrDirLocked: another process holds the log dir's .lock.
	ErrDirLocked = errors.New("log: log dir locked")
	// ErrInconsistentMeta: meta.properties names another broker or cluster.
	ErrInconsistentMeta = errors.New("log: meta.properties does not match this broker")
)
