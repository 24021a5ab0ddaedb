package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
	"github.com/brook-mq/brook/replica"
)

// appendErrorCode maps an error from appending a produced batch to the
// Kafka error code of the partition's response.
func appendErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, replica.ErrNotLeader):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, replica.ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, log.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, log.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, log.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, log.ErrTransactionCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, log.ErrMessageTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, log.ErrRecordListTooLarge):
		return kerr.RecordListTooLarge.Code
	case errors.Is(err, log.ErrInvalidRecord):
		// The batch error in the chain may name a finer code
		// (INVALID_TIMESTAMP, UNSUPPORTED_COMPRESSION_TYPE).
		if code := batch.KafkaCode(err); code != kerr.UnknownServerError.Code {
			return code
		}
		return kerr.InvalidRecord.Code
	case errors.Is(err, log.ErrCorrupt):
		return kerr.CorruptMessage.Code
	case errors.Is(err, log.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, log.ErrLogDirOffline):
		return kerr.KafkaStorageError.Code
	case errors.Is(err, log.ErrClosed):
		return kerr.NotLeaderForPartition.Code
	}
	if code := batch.KafkaCode(err); code != kerr.UnknownServerError.Code {
		return code
	}
	return kerr.KafkaStorageError.Code
}

// commitWaitErrorCode maps the failure of an acks=all wait
// (replica.WaitForCommit): leadership lost, the ISR shrunk below
// min.insync.replicas, or the timeout.
func commitWaitErrorCode(err error) int16 {
	switch {
	case errors.Is(err, replica.ErrNotLeader):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, replica.ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicasAfterAppend.Code
	}
	return kerr.RequestTimedOut.Code
}
