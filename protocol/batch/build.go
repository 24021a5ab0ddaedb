package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Producer holds the idempotence fields of a batch.
type Producer struct {
	ID           int64
	Epoch        int16
	BaseSequence int32
}

// BuildOptions are the batch-level fields of a batch to build.
type BuildOptions struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32 // NoPartitionLeader (-1) when unknown
	Compression          Compression
	// BaseTimestamp is the timestamp the records' TimestampDelta count from.
	BaseTimestamp int64
	// LogAppendTime marks the batch as carrying the broker's time; then
	// MaxTimestamp is that time. Otherwise maxTimestamp is computed from
	// the records, as Kafka's builder does.
	LogAppendTime bool
	MaxTimestamp  int64
	Transactional bool
	Control       bool
	// Producer is nil for a batch from a non-idempotent producer
	// (producerId -1, epoch -1, sequence -1).
	Producer *Producer
}

var errBuild = errors.New("batch: cannot build")

// Build returns a v2 batch holding recs, compressed with opts.Compression,
// with a correct CRC. Offset deltas must be strictly increasing, as Kafka's
// builder requires; for a batch from scratch, set OffsetDelta to the index.
// Attributes of records are written as given (Kafka leaves them 0).
func Build(opts BuildOptions, recs []Record, codecs *Codecs) ([]byte, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w: no records", errBuild)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].OffsetDelta <= recs[i-1].OffsetDelta {
			return nil, fmt.Errorf("%w: offset delta %d after %d", errBuild, recs[i].OffsetDelta, recs[i-1].OffsetDelta)
		}
	}
	if recs[0].OffsetDelta < 0 {
		return nil, fmt.Errorf("%w: negative offset delta %d", errBuild, recs[0].OffsetDelta)
	}
	// Size everything first so that the records are written once, straight
	// into the batch when uncompressed.
	total := int64(0)
	maxDelta := int64(math.MinInt64)
	for i := range recs {
		n := bodySize(&recs[i])
		total += varlongSize(n) + n
		maxDelta = max(maxDelta, recs[i].TimestampDelta)
	}
	if total > math.MaxInt32-HeaderSize {
		return nil, fmt.Errorf("%w: %d bytes of records", errBuild, total)
	}
	var buf []byte
	if opts.Compression == None {
		buf = make([]byte, HeaderSize, HeaderSize+total)
	} else {
		buf = make([]byte, 0, total)
	}
	for i := range recs {
		var err error
		if buf, err = appendRecord(buf, &recs[i]); err != nil {
			return nil, err
		}
	}
	h := Header{
		BaseOffset:           opts.BaseOffset,
		PartitionLeaderEpoch: opts.PartitionLeaderEpoch,
		Magic:                MagicV2,
		Attributes:           int16(opts.Compression) & CompressionMask,
		LastOffsetDelta:      recs[len(recs)-1].OffsetDelta,
		BaseTimestamp:        opts.BaseTimestamp,
		MaxTimestamp:         opts.BaseTimestamp + maxDelta,
		ProducerID:           NoProducerID,
		ProducerEpoch:        -1,
		BaseSequence:         NoSequence,
		RecordCount:          int32(len(recs)),
	}
	if opts.LogAppendTime {
		h.Attributes |= TimestampTypeBit
		h.MaxTimestamp = opts.MaxTimestamp
	}
	if opts.Transactional {
		h.Attributes |= TransactionalBit
	}
	if opts.Control {
		h.Attributes |= ControlBit
	}
	if p := opts.Producer; p != nil {
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = p.ID, p.Epoch, p.BaseSequence
	}
	if opts.Compression == None {
		finishHeader(buf, &h)
		return buf, nil
	}
	return assemble(make([]byte, 0, HeaderSize+len(buf)/2), &h, buf, codecs)
}

// assemble appends the batch with header h (its compression is used; its
// length and CRC are computed) and the uncompressed records raw.
func assemble(dst []byte, h *Header, raw []byte, codecs *Codecs) ([]byte, error) {
	codec := h.Compression()
	if !codec.Valid() {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedCompression, codec)
	}
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	if codec == None {
		dst = append(dst, raw...)
	} else {
		if codecs == nil {
			codecs = MustCodecs()
		}
		var err error
		if dst, err = codecs.Compress(dst, raw, codec); err != nil {
			return nil, err
		}
	}
	if len(dst)-start > math.MaxInt32 {
		return nil, fmt.Errorf("%w: batch of %d bytes", errBuild, len(dst)-start)
	}
	finishHeader(dst[start:], h)
	return dst, nil
}

// finishHeader writes h over the first HeaderSize bytes of b, which hold
// space for it followed by the records section, with the length and CRC
// of b.
func finishHeader(b []byte, h *Header) {
	rb := kmsg.RecordBatch{
		FirstOffset:          h.BaseOffset,
		Length:               int32(len(b) - LengthPrefix),
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Magic:                MagicV2,
		Attributes:           h.Attributes,
		LastOffsetDelta:      h.LastOffsetDelta,
		FirstTimestamp:       h.BaseTimestamp,
		MaxTimestamp:         h.MaxTimestamp,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		FirstSequence:        h.BaseSequence,
		NumRecords:           h.RecordCount,
	}
	rb.AppendTo(b[:0]) // exactly HeaderSize bytes, in place
	UpdateCRC(b)
}

// appendRecord appends rec in wire form, using kmsg's record encoder.
func appendRecord(dst []byte, rec *Record) ([]byte, error) {
	kr := kmsg.Record{
		Attributes:       rec.Attributes,
		TimestampDelta64: rec.TimestampDelta,
		TimestampDelta:   int32(rec.TimestampDelta),
		OffsetDelta:      rec.OffsetDelta,
		Key:              rec.Key,
		Value:            rec.Value,
	}
	if len(rec.Headers) > 0 {
		kr.Headers = make([]kmsg.Header, len(rec.Headers))
		for i, h := range rec.Headers {
			kr.Headers[i] = kmsg.Header{Key: h.Key, Value: h.Value}
		}
	}
	size := bodySize(rec)
	if size > math.MaxInt32 {
		return dst, fmt.Errorf("%w: record of %d bytes", errBuild, size)
	}
	kr.Length = int32(size)
	return kr.AppendTo(dst), nil
}

// bodySize is the encoded size of rec after its length field.
func bodySize(rec *Record) int64 {
	n := 1 + varlongSize(rec.TimestampDelta) + varlongSize(int64(rec.OffsetDelta)) +
		bytesSize(rec.Key) + bytesSize(rec.Value) + varlongSize(int64(len(rec.Headers)))
	for _, h := range rec.Headers {
		n += varlongSize(int64(len(h.Key))) + int64(len(h.Key)) + bytesSize(h.Value)
	}
	return n
}

func bytesSize(b []byte) int64 {
	if b == nil {
		return 1 // varint -1
	}
	return varlongSize(int64(len(b))) + int64(len(b))
}

// varlongSize is the size of v as a zig-zag varint.
func varlongSize(v int64) int64 {
	var buf [binary.MaxVarintLen64]byte
	return int64(binary.PutVarint(buf[:], v))
}
