package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrNotLeader may be returned by Partition.Append when the broker lost
// leadership of the partition; the group coordinator then answers
// NOT_COORDINATOR so that clients look the coordinator up again.
var ErrNotLeader = errors.New("group: not leader of the offsets partition")

// groupErrorCode maps an append failure of a group's metadata (a SyncGroup
// or a static member's rejoin) to the code Kafka's storeGroup answers with:
// a timeout asks for a new rebalance.
func groupErrorCode(err error) int16 {
	if errors.Is(err, kerr.RequestTimedOut) {
		return kerr.RebalanceInProgress.Code
	}
	return appendErrorCode(err)
}

// appendErrorCode maps an append failure of group metadata to the code
// Kafka's GroupMetadataManager answers with, so that clients retry where
// retrying helps.
func appendErrorCode(err error) int16 {
	var ke *kerr.Error
	switch {
	case errors.Is(err, ErrNotLeader):
		return kerr.NotCoordinator.Code
	case errors.As(err, &ke):
		switch ke {
		case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
			return kerr.CoordinatorNotAvailable.Code
		case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
			return kerr.NotCoordinator.Code
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
			return kerr.UnknownServerError.Code
		}
		return ke.Code
	}
	// Anything else (a cancelled context, a closed log) is transient from
	// the client's point of view.
	return kerr.CoordinatorNotAvailable.Code
}

// commitErrorCode is appendErrorCode for offset commits (Kafka's
// storeOffsets), where too large a batch is the client's fault and a
// timeout is answered as it is.
func commitErrorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
			return kerr.InvalidCommitOffsetSize.Code
		case kerr.RequestTimedOut:
			return kerr.RequestTimedOut.Code
		}
	}
	return appendErrorCode(err)
}

// AppendErrorCode is the mapping for other coordinators that append to
// an internal topic the way this package does: Kafka's
// TransactionStateManager maps append failures to the same codes.
func AppendErrorCode(err error) int16 { return appendErrorCode(err) }
