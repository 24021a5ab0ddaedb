package txn

import (
	"errors"

	"github.com/brook-mq/brook/group"
)

// ErrNotLeader may be returned by Partition.Append when the broker lost
// leadership of the __transaction_state partition; requests then get
// NOT_COORDINATOR. It is the group coordinator's sentinel, so that one
// broker adapter error serves both coordinators.
var ErrNotLeader = group.ErrNotLeader

// ErrCorrupt marks a __transaction_state record this package cannot decode.
var ErrCorrupt = errors.New("txn: corrupt transaction state record")

// appendErrorCode maps an append failure to the code Kafka's
// TransactionStateManager answers with; it is the group coordinator's
// mapping.
func appendErrorCode(err error) int16 { return group.AppendErrorCode(err) }
