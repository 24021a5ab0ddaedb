// Package batch reads and checks Kafka record batches (magic v2), the unit
// in which records travel on the wire and lie on disk.
//
// Layout of a batch (big endian), as Kafka defines it:
//
//	offset  size  field
//	0       8     baseOffset
//	8       4     batchLength          (bytes after this field)
//	12      4     partitionLeaderEpoch
//	16      1     magic                (2)
//	17      4     crc                  (CRC-32C of bytes 21..end)
//	21      2     attributes
//	23      4     lastOffsetDelta
//	27      8     baseTimestamp
//	35      8     maxTimestamp
//	43      8     producerId
//	51      2     producerEpoch
//	53      4     baseSequence
//	57      4     recordCount
//	61      ...   records (compressed as a whole when attributes say so)
//
// baseOffset and partitionLeaderEpoch lie outside the CRC, so a broker can
// assign offsets and stamp the leader epoch without recomputing it.
package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Byte positions of the header fields.
const (
	offBaseOffset           = 0
	offBatchLength          = 8
	offPartitionLeaderEpoch = 12
	offMagic                = 16
	offCRC                  = 17
	offAttributes           = 21
	offLastOffsetDelta      = 23
	offBaseTimestamp        = 27
	offMaxTimestamp         = 35
	offProducerID           = 43
	offProducerEpoch        = 51
	offBaseSequence         = 53
	offRecordCount          = 57

	// HeaderSize is the size of a v2 batch header, up to the first record.
	HeaderSize = 61
	// LengthPrefix is how many bytes precede and are not counted in
	// batchLength: baseOffset and batchLength themselves.
	LengthPrefix = 12
)

// Attribute bits.
const (
	CompressionMask   = 0x07
	TimestampTypeBit  = 0x08 // set: LogAppendTime
	TransactionalBit  = 0x10
	ControlBit        = 0x20
	DeleteHorizonBit  = 0x40
	MagicV2           = 2
	NoProducerID      = -1
	NoSequence        = -1
	NoPartitionLeader = -1
)

// Compression codecs as the attributes encode them.
type Compression int8

const (
	None   Compression = 0
	Gzip   Compression = 1
	Snappy Compression = 2
	LZ4    Compression = 3
	Zstd   Compression = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors that callers map to Kafka error codes.
var (
	// ErrTruncated: fewer bytes than the header or batchLength announce.
	ErrTruncated = errors.New("batch: truncated")
	// ErrCorrupt: framing or CRC is wrong (CORRUPT_MESSAGE).
	ErrCorrupt = errors.New("batch: corrupt")
	// ErrUnsupportedMagic: magic other than 2 (UNSUPPORTED_VERSION for
	// produce, INVALID_RECORD where Kafka says so).
	ErrUnsupportedMagic = errors.New("batch: unsupported magic")
)

// Header is the decoded fixed part of a batch.
type Header struct {
	BaseOffset           int64
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// Size is the whole batch's size in bytes, prefix included.
func (h *Header) Size() int { return int(h.BatchLength) + LengthPrefix }

// LastOffset is the offset of the batch's last record.
func (h *Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Compression is the codec of the records section.
func (h *Header) Compression() Compression { return Compression(h.Attributes & CompressionMask) }

// LogAppendTime reports whether the timestamps are the broker's.
func (h *Header) LogAppendTime() bool { return h.Attributes&TimestampTypeBit != 0 }

// Transactional reports whether the batch belongs to a transaction.
func (h *Header) Transactional() bool { return h.Attributes&TransactionalBit != 0 }

// Control reports whether the batch holds a control record (txn marker).
func (h *Header) Control() bool { return h.Attributes&ControlBit != 0 }

// HasProducerID reports whether the batch is from an idempotent producer.
func (h *Header) HasProducerID() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence of the last record, wrapping at int32 as
// Kafka's DefaultRecordBatch.incrementSequence does.
func (h *Header) LastSequence() int32 {
	if h.BaseSequence == NoSequence {
		return NoSequence
	}
	return IncrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// IncrementSequence adds delta to seq, wrapping past MaxInt32 to 0.
func IncrementSequence(seq, delta int32) int32 {
	if seq > int32(^uint32(0)>>1)-delta {
		return delta - (int32(^uint32(0)>>1) - seq) - 1
	}
	return seq + delta
}

// ParseHeader decodes the header at the start of b. It checks only that the
// header is present and batchLength is sane; it does not need the whole
// batch, so recovery can use it to step from batch to batch.
func ParseHeader(b []byte) (Header, error) {
	var h Header
	if len(b) < LengthPrefix {
		return h, ErrTruncated
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[offBaseOffset:]))
	h.BatchLength = int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	if h.BatchLength < HeaderSize-LengthPrefix {
		return h, fmt.Errorf("%w: batch length %d below header size", ErrCorrupt, h.BatchLength)
	}
	if len(b) < HeaderSize {
		return h, ErrTruncated
	}
	h.PartitionLeaderEpoch = int32(binary.BigEndian.Uint32(b[offPartitionLeaderEpoch:]))
	h.Magic = int8(b[offMagic])
	if h.Magic != MagicV2 {
		return h, fmt.Errorf("%w: %d", ErrUnsupportedMagic, h.Magic)
	}
	h.CRC = binary.BigEndian.Uint32(b[offCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
	h.RecordCount = int32(binary.BigEndian.Uint32(b[offRecordCount:]))
	return h, nil
}

// CheckCRC verifies the CRC of a complete batch b (exactly one batch).
func CheckCRC(b []byte, h *Header) error {
	if len(b) < h.Size() {
		return ErrTruncated
	}
	if got := crc32.Checksum(b[offAttributes:h.Size()], castagnoli); got != h.CRC {
		return fmt.Errorf("%w: crc %08x, header says %08x", ErrCorrupt, got, h.CRC)
	}
	return nil
}

// SetBaseOffset rewrites baseOffset in place; it is outside the CRC.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetPartitionLeaderEpoch rewrites the leader epoch in place; outside the CRC.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime marks the batch as carrying the broker's timestamp ts and
// recomputes the CRC, since attributes and maxTimestamp are inside it.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | TimestampTypeBit
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	UpdateCRC(b)
}

// SetMaxTimestamp sets the timestamp type and maxTimestamp as Kafka's
// LogValidator does after validation, recomputing the CRC only if either
// changed (both are inside it).
func SetMaxTimestamp(b []byte, logAppendTime bool, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:])
	newAttrs := attrs &^ TimestampTypeBit
	if logAppendTime {
		newAttrs |= TimestampTypeBit
	}
	if attrs == newAttrs && int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])) == ts {
		return
	}
	binary.BigEndian.PutUint16(b[offAttributes:], newAttrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	UpdateCRC(b)
}

// UpdateCRC recomputes the CRC of the single complete batch b.
func UpdateCRC(b []byte) {
	n := int(binary.BigEndian.Uint32(b[offBatchLength:])) + LengthPrefix
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:n], castagnoli))
}
