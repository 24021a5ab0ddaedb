package log

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/brook-mq/brook/protocol/batch"
)

// firstRecordAtOrAfter finds, inside the batch at pos, the first record
// with timestamp >= ts and offset >= from, as Kafka's timestamp search does
// record by record. LogAppendTime batches give every record the batch's
// max timestamp.
func (s *segment) firstRecordAtOrAfter(h *batch.Header, pos, ts, from int64, codecs *batch.Codecs) (int64, int64, bool, error) {
	first := max(h.BaseOffset, from)
	if first > h.LastOffset() {
		return 0, 0, false, nil
	}
	if h.LogAppendTime() {
		if h.MaxTimestamp < ts {
			return 0, 0, false, nil
		}
		return first, h.MaxTimestamp, true, nil
	}
	buf := make([]byte, h.Size())
	if _, err := s.log.ReadAt(buf, pos); err != nil {
		return 0, 0, false, fmt.Errorf("read batch at %d of segment %d: %w", pos, s.baseOffset, err)
	}
	match := func(tsDelta, offDelta int64) bool {
		return h.BaseTimestamp+tsDelta >= ts && h.BaseOffset+offDelta >= from
	}
	if h.Compression() == batch.None {
		found := false
		var fo, ft int64
		err := walkRecords(buf[batch.HeaderSize:], int(h.RecordCount), func(tsDelta, offDelta int64) bool {
			if match(tsDelta, offDelta) {
				fo, ft, found = h.BaseOffset+offDelta, h.BaseTimestamp+tsDelta, true
				return false
			}
			return true
		})
		if err != nil {
			return 0, 0, false, fmt.Errorf("batch at %d of segment %d: %w", pos, s.baseOffset, err)
		}
		return fo, ft, found, nil
	}
	r, err := batch.Records(buf, codecs)
	if err != nil {
		return 0, 0, false, fmt.Errorf("batch at %d of segment %d: %w", pos, s.baseOffset, err)
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return 0, 0, false, nil
		}
		if err != nil {
			return 0, 0, false, fmt.Errorf("batch at %d of segment %d: %w", pos, s.baseOffset, err)
		}
		if match(rec.TimestampDelta, int64(rec.OffsetDelta)) {
			return h.BaseOffset + int64(rec.OffsetDelta), h.BaseTimestamp + rec.TimestampDelta, true, nil
		}
	}
}

// walkRecords calls fn with the timestamp and offset deltas of each
// uncompressed record until fn returns false. Each record is
// length varint | attributes int8 | timestampDelta varlong | offsetDelta varint | ...
func walkRecords(p []byte, count int, fn func(tsDelta, offDelta int64) bool) error {
	for i := 0; i < count; i++ {
		length, n := binary.Varint(p)
		if n <= 0 || length < 0 || int64(len(p)-n) < length {
			return fmt.Errorf("%w: record %d length", ErrCorrupt, i)
		}
		rec := p[n : n+int(length)]
		p = p[n+int(length):]
		if len(rec) < 1 {
			return fmt.Errorf("%w: record %d empty", ErrCorrupt, i)
		}
		tsDelta, n1 := binary.Varint(rec[1:])
		if n1 <= 0 {
			return fmt.Errorf("%w: record %d timestamp delta", ErrCorrupt, i)
		}
		offDelta, n2 := binary.Varint(rec[1+n1:])
		if n2 <= 0 {
			return fmt.Errorf("%w: record %d offset delta", ErrCorrupt, i)
		}
		if !fn(tsDelta, offDelta) {
			return nil
		}
	}
	return nil
}
