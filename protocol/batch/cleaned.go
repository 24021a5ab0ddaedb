package batch

import (
	"fmt"
	"math"
)

// This file rebuilds batches for the log cleaner (compaction), as Kafka's
// MemoryRecords.filterTo does: a batch keeps its offsets, producer fields
// and codec while losing records.

// NoTimestamp is Kafka's RecordBatch.NO_TIMESTAMP.
const NoTimestamp = -1

// DeleteHorizonMs reports the batch's delete horizon (KIP-534): when the
// delete-horizon attribute bit is set, baseTimestamp holds the time after
// which the cleaner may remove the batch's tombstones.
func (h *Header) DeleteHorizonMs() (int64, bool) {
	if h.Attributes&DeleteHorizonBit == 0 {
		return 0, false
	}
	return h.BaseTimestamp, true
}

// Rebuild returns a batch holding recs, a subset of the records of the
// batch whose header is orig, with each record's absolute timestamp,
// offset delta, key, value and headers unchanged. As Kafka's
// buildRetainedRecordsInto: baseOffset, lastOffsetDelta (so the producer's
// last sequence survives), partition leader epoch, producer id, epoch and
// base sequence, the transactional, control and timestamp-type bits and the
// codec are kept. deleteHorizonMs >= 0 sets the delete-horizon bit and
// becomes baseTimestamp; otherwise baseTimestamp is the first record's
// timestamp. recs carry TimestampDelta relative to orig.BaseTimestamp, as
// read.
func Rebuild(orig Header, recs []Record, deleteHorizonMs int64, codecs *Codecs) ([]byte, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no records", errBuild)
	}
	baseTs := orig.BaseTimestamp + recs[0].TimestampDelta
	if deleteHorizonMs >= 0 {
		baseTs = deleteHorizonMs
	}
	maxTs := int64(math.MinInt64)
	out := make([]Record, len(recs))
	for i := range recs {
		out[i] = recs[i]
		ts := orig.BaseTimestamp + recs[i].TimestampDelta
		out[i].TimestampDelta = ts - baseTs
		maxTs = max(maxTs, ts)
		if i > 0 && recs[i].OffsetDelta <= recs[i-1].OffsetDelta {
			return nil, fmt.Errorf("%w: offset delta %d after %d", errBuild, recs[i].OffsetDelta, recs[i-1].OffsetDelta)
		}
	}
	if recs[len(recs)-1].OffsetDelta > orig.LastOffsetDelta || recs[0].OffsetDelta < 0 {
		return nil, fmt.Errorf("%w: offset deltas %d..%d outside the batch's 0..%d", errBuild, recs[0].OffsetDelta, recs[len(recs)-1].OffsetDelta, orig.LastOffsetDelta)
	}
	var raw []byte
	for i := range out {
		var err error
		if raw, err = appendRecord(raw, &out[i]); err != nil {
			return nil, err
		}
	}
	h := orig
	h.Magic = MagicV2
	h.BaseTimestamp = baseTs
	h.MaxTimestamp = maxTs
	if orig.LogAppendTime() {
		h.MaxTimestamp = orig.MaxTimestamp
	}
	h.RecordCount = int32(len(out))
	h.Attributes &^= DeleteHorizonBit
	if deleteHorizonMs >= 0 {
		h.Attributes |= DeleteHorizonBit
	}
	return assemble(make([]byte, 0, HeaderSize+len(raw)), &h, raw, codecs)
}

// EmptyBatch returns a batch with no records and orig's offsets, producer
// fields, leader epoch and max timestamp, uncompressed, as Kafka's
// DefaultRecordBatch.writeEmptyHeader: the cleaner keeps it when it removed
// every record of a producer's last batch, so that the producer's sequence
// and epoch survive compaction.
func EmptyBatch(orig Header) []byte {
	h := orig
	h.Magic = MagicV2
	h.Attributes = orig.Attributes & (TimestampTypeBit | TransactionalBit | ControlBit)
	h.BaseTimestamp = NoTimestamp
	h.RecordCount = 0
	b := make([]byte, HeaderSize)
	finishHeader(b, &h)
	return b
}
