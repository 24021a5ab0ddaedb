package log

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol/batch"
)

// TxnMarker is the end of a transaction as a transaction coordinator asks
// a partition leader to write it (WriteTxnMarkers): a control batch of the
// producer holding one COMMIT or ABORT record.
type TxnMarker struct {
	ProducerID    int64
	ProducerEpoch int16
	// CoordinatorEpoch is the epoch of the coordinator that decided; a
	// marker from an older coordinator than the last one seen is fenced.
	CoordinatorEpoch int32
	Commit           bool
	// TransactionVersion is the coordinator's (WriteTxnMarkers v2): at 2
	// its epoch was bumped past the transaction's, and the leader holds it
	// to that. Markers read back from the log carry 0.
	TransactionVersion int8
}

// Control record types of an end-transaction marker (Kafka's
// ControlRecordType); other control types (KRaft's) are not markers.
const (
	controlTypeAbort  = 0
	controlTypeCommit = 1
)

// buildMarkerBatch encodes m as Kafka's MemoryRecords.withEndTransactionMarker
// does: a transactional control batch without sequence, one record whose
// key is ControlRecordKey{version 0, type} and whose value is
// EndTxnMarker{version 0, coordinator epoch}.
func buildMarkerBatch(m TxnMarker, timestamp int64) ([]byte, error) {
	key := kmsg.NewControlRecordKey()
	key.Type = controlTypeAbort
	if m.Commit {
		key.Type = controlTypeCommit
	}
	value := kmsg.NewEndTxnMarker()
	value.CoordinatorEpoch = m.CoordinatorEpoch
	rec := batch.Record{Key: key.AppendTo(nil), Value: value.AppendTo(nil)}
	b, err := batch.Build(batch.BuildOptions{
		BaseTimestamp: timestamp, PartitionLeaderEpoch: batch.NoPartitionLeader,
		Transactional: true, Control: true,
		Producer: &batch.Producer{ID: m.ProducerID, Epoch: m.ProducerEpoch, BaseSequence: batch.NoSequence},
	}, []batch.Record{rec}, nil)
	if err != nil {
		return nil, fmt.Errorf("build marker for producer %d: %w", m.ProducerID, err)
	}
	return b, nil
}

// decodeMarkerBatch reads the marker of a control batch (whole batch in
// b). ok is false for a control batch that is not an end-transaction
// marker (an unknown control type), which the producer state ignores as
// Kafka does; a malformed key or value is ErrCorrupt.
func decodeMarkerBatch(b []byte, codecs *batch.Codecs) (m TxnMarker, ok bool, err error) {
	r, err := batch.Records(b, codecs)
	if err != nil {
		return m, false, fmt.Errorf("%w: control batch: %w", ErrCorrupt, err)
	}
	defer r.Close()
	h := r.Header()
	if !h.Control() {
		return m, false, fmt.Errorf("%w: not a control batch", ErrCorrupt)
	}
	// Kafka reads only the first record of a control batch.
	rec, err := r.Next()
	if err != nil {
		return m, false, fmt.Errorf("%w: control batch record: %w", ErrCorrupt, err)
	}
	var key kmsg.ControlRecordKey
	if err := key.ReadFrom(rec.Key); err != nil || key.Version < 0 {
		return m, false, fmt.Errorf("%w: control record key %x", ErrCorrupt, rec.Key)
	}
	if key.Type != controlTypeAbort && key.Type != controlTypeCommit {
		return m, false, nil
	}
	var value kmsg.EndTxnMarker
	if err := value.ReadFrom(rec.Value); err != nil || value.Version < 0 {
		return m, false, fmt.Errorf("%w: end transaction marker value %x", ErrCorrupt, rec.Value)
	}
	return TxnMarker{
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch,
		CoordinatorEpoch: value.CoordinatorEpoch, Commit: key.Type == controlTypeCommit,
	}, true, nil
}
