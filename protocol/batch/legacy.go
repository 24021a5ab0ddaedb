package batch

// Legacy message sets (magic 0 and 1), which Produce v0-2 carry. A message
// set is messages back to back; each message (big endian):
//
//	offset  size  field
//	0       8     offset
//	8       4     messageSize       (bytes after this field)
//	12      4     crc               (CRC-32 IEEE of bytes 16..end)
//	16      1     magic             (0 or 1)
//	17      1     attributes        (bits 0-2 codec; bit 3 LogAppendTime, magic 1)
//	18      8     timestamp         (magic 1 only)
//	..      4     keyLength         (-1: null key)
//	..      ...   key
//	..      4     valueLength       (-1: null value)
//	..      ...   value
//
// A compressed message (a wrapper) has a codec in its attributes and holds
// in its value the compressed message set of its inner messages, which are
// uncompressed and of the wrapper's magic; in magic 1 their offsets count
// from 0 within the wrapper. The magic byte sits at byte 16, as in a v2
// batch, which is how a reader tells the formats apart.
//
// Brook stores only v2 batches: as Kafka's LogValidator does when
// message.format.version is 3.0 or later, ConvertLegacy turns a produced
// message set into one v2 batch with the set's codec, fresh offset deltas
// and each message's timestamp (magic 0 has none: -1, NO_TIMESTAMP).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Layout of a legacy message.
const (
	legacyOffMessageSize = 8
	legacyOffCRC         = 12
	legacyOffMagic       = 16
	legacyOffAttributes  = 17
	legacyOffTimestamp   = 18
	// legacyLogOverhead is offset and messageSize, outside messageSize.
	legacyLogOverhead = 12
	// Smallest messageSize: crc, magic, attributes, [timestamp,] and the
	// two lengths, as Kafka's LegacyRecord.RECORD_OVERHEAD_V0/V1.
	legacyOverheadV0 = 14
	legacyOverheadV1 = 22
)

// IsLegacy reports whether b starts with a magic 0 or 1 message rather
// than a v2 batch (or too few bytes to tell, which is not legacy).
func IsLegacy(b []byte) bool {
	return len(b) > legacyOffMagic && b[legacyOffMagic] < MagicV2
}

// legacyMessage is one decoded message; key and value alias the input and
// are nil when null.
type legacyMessage struct {
	magic      int8
	attributes int8
	timestamp  int64 // -1 for magic 0
	key, value []byte
}

func (m *legacyMessage) compression() Compression {
	return Compression(m.attributes & CompressionMask)
}

func (m *legacyMessage) logAppendTime() bool {
	return m.magic > 0 && m.attributes&TimestampTypeBit != 0
}

// parseLegacyMessage decodes the message at the start of b and returns it
// with its whole size. ErrTruncated means b ends inside the message.
func parseLegacyMessage(b []byte) (legacyMessage, int, error) {
	var m legacyMessage
	if len(b) < legacyLogOverhead {
		return m, 0, ErrTruncated
	}
	size := int32(binary.BigEndian.Uint32(b[legacyOffMessageSize:]))
	if size < legacyOverheadV0 {
		return m, 0, fmt.Errorf("%w: message size %d below the minimum %d", ErrCorrupt, size, legacyOverheadV0)
	}
	end := legacyLogOverhead + int(size)
	if len(b) < end {
		return m, 0, ErrTruncated
	}
	msg := b[:end]
	if got, want := crc32.ChecksumIEEE(msg[legacyOffMagic:]), binary.BigEndian.Uint32(msg[legacyOffCRC:]); got != want {
		return m, 0, fmt.Errorf("%w: message crc %08x, header says %08x", ErrCorrupt, got, want)
	}
	m.magic = int8(msg[legacyOffMagic])
	m.attributes = int8(msg[legacyOffAttributes])
	m.timestamp = -1
	pos := legacyOffTimestamp
	switch m.magic {
	case 0:
	case 1:
		if size < legacyOverheadV1 {
			return m, 0, fmt.Errorf("%w: magic 1 message size %d below the minimum %d", ErrCorrupt, size, legacyOverheadV1)
		}
		m.timestamp = int64(binary.BigEndian.Uint64(msg[pos:]))
		pos += 8
	default:
		return m, 0, fmt.Errorf("%w: message set mixes magic %d into a legacy set", ErrInvalidRecord, m.magic)
	}
	var err error
	if m.key, pos, err = legacyBytes(msg, pos); err != nil {
		return m, 0, fmt.Errorf("key: %w", err)
	}
	if m.value, pos, err = legacyBytes(msg, pos); err != nil {
		return m, 0, fmt.Errorf("value: %w", err)
	}
	if pos != end {
		return m, 0, fmt.Errorf("%w: %d bytes after the value of a message", ErrCorrupt, end-pos)
	}
	return m, end, nil
}

// legacyBytes reads an int32-length-prefixed field at pos of msg.
func legacyBytes(msg []byte, pos int) ([]byte, int, error) {
	if len(msg)-pos < 4 {
		return nil, 0, fmt.Errorf("%w: length past the message end", ErrCorrupt)
	}
	n := int32(binary.BigEndian.Uint32(msg[pos:]))
	pos += 4
	switch {
	case n == -1:
		return nil, pos, nil
	case n < -1 || int(n) > len(msg)-pos:
		return nil, 0, fmt.Errorf("%w: length %d with %d bytes left", ErrCorrupt, n, len(msg)-pos)
	}
	return msg[pos : pos+int(n) : pos+int(n)], pos + int(n), nil
}

// legacyConverter accumulates the records of a v2 batch from messages.
type legacyConverter struct {
	raw   []byte // records section, uncompressed
	count int32
	magic int8 // of the first message; -1 before it
	codec Compression
	// baseTimestamp is the first record's timestamp, maxTimestamp the
	// largest; logAppendTime is set if a producer marked a message so.
	baseTimestamp, maxTimestamp int64
	logAppendTime               bool
}

func (c *legacyConverter) add(m *legacyMessage, ts int64) error {
	if c.count == 0 {
		c.baseTimestamp = ts
	}
	if c.count == 1<<31-1 {
		return invalidf("too many messages in a message set")
	}
	rec := Record{TimestampDelta: ts - c.baseTimestamp, OffsetDelta: c.count, Key: m.key, Value: m.value}
	var err error
	if c.raw, err = appendRecord(c.raw, &rec); err != nil {
		return err
	}
	c.maxTimestamp = max(c.maxTimestamp, ts)
	c.count++
	return nil
}

// ConvertLegacy converts a message set of magic 0 or 1 messages, as
// Produce v0-2 carry it, into one v2 batch with the same records (keys,
// values, timestamps, in order; offset deltas 0..n-1) compressed with the
// set's codec, as Kafka's LogValidator converts on append. Compressed
// messages are decompressed up to maxUncompressedBytes in all (zero or
// less: DefaultMaxUncompressedBytes). A partial message at the end of the
// set is dropped, as Kafka trims it; a set without a complete message is
// INVALID_RECORD. Errors map to Kafka codes with KafkaCode.
func ConvertLegacy(b []byte, codecs *Codecs, maxUncompressedBytes int64) ([]byte, error) {
	if codecs == nil {
		codecs = MustCodecs()
	}
	limit := maxUncompressedBytes
	if limit <= 0 {
		limit = DefaultMaxUncompressedBytes
	}
	bound := limit
	c := legacyConverter{magic: -1, maxTimestamp: -1}
	var inner []byte
	for pos := 0; pos < len(b); {
		m, n, err := parseLegacyMessage(b[pos:])
		if err == ErrTruncated {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("message at byte %d: %w", pos, err)
		}
		pos += n
		if c.magic < 0 {
			c.magic = m.magic
		} else if m.magic != c.magic {
			return nil, invalidf("message set mixes magic %d and %d", c.magic, m.magic)
		}
		c.logAppendTime = c.logAppendTime || m.logAppendTime()
		codec := m.compression()
		if codec == None {
			if err := c.add(&m, m.timestamp); err != nil {
				return nil, err
			}
			continue
		}
		if codec != Gzip && codec != Snappy && codec != LZ4 {
			return nil, fmt.Errorf("%w: codec id %d in a magic %d message", ErrUnsupportedCompression, int8(codec), m.magic)
		}
		if m.value == nil {
			return nil, invalidf("compressed message with a null value (magic %d)", m.magic)
		}
		c.codec = codec
		value := m.value
		if codec == LZ4 && m.magic == 0 {
			value = fixLegacyLZ4(value)
		}
		if limit <= 0 {
			return nil, fmt.Errorf("%w: message set decompresses past %d bytes", ErrMessageTooLarge, bound)
		}
		if inner, err = codecs.Decompress(inner[:0], value, codec, limit); err != nil {
			if errors.Is(err, ErrMessageTooLarge) {
				return nil, err
			}
			// As for a v2 batch: a garbled payload is an invalid record.
			return nil, fmt.Errorf("%w: decompress message at byte %d: %w", ErrInvalidRecord, pos-n, err)
		}
		limit -= int64(len(inner))
		if err := c.addInner(&m, inner); err != nil {
			return nil, err
		}
	}
	if c.count == 0 {
		return nil, invalidf("message set of %d bytes holds no complete message", len(b))
	}
	return c.finish(codecs)
}

// addInner adds the inner messages of wrapper w, decompressed in set. As
// Kafka's LogValidator, an inner message must be uncompressed and of the
// wrapper's magic; a magic 1 wrapper stamped LogAppendTime gives its
// timestamp to every inner message.
func (c *legacyConverter) addInner(w *legacyMessage, set []byte) error {
	if len(set) == 0 {
		return invalidf("compressed message holds no messages")
	}
	for pos := 0; pos < len(set); {
		m, n, err := parseLegacyMessage(set[pos:])
		if err == ErrTruncated {
			return fmt.Errorf("%w: %w: inner message at byte %d cut short", ErrCorrupt, ErrTruncated, pos)
		}
		if err != nil {
			return fmt.Errorf("inner message at byte %d: %w", pos, err)
		}
		pos += n
		if m.magic != w.magic {
			return invalidf("inner message of magic %d in a magic %d wrapper", m.magic, w.magic)
		}
		if m.compression() != None {
			return invalidf("compressed message holds a compressed message")
		}
		ts := m.timestamp
		if w.logAppendTime() {
			ts = w.timestamp
		}
		if err := c.add(&m, ts); err != nil {
			return err
		}
	}
	return nil
}

// finish assembles the v2 batch.
func (c *legacyConverter) finish(codecs *Codecs) ([]byte, error) {
	h := Header{
		PartitionLeaderEpoch: NoPartitionLeader,
		Magic:                MagicV2,
		Attributes:           int16(c.codec),
		LastOffsetDelta:      c.count - 1,
		BaseTimestamp:        c.baseTimestamp,
		MaxTimestamp:         c.maxTimestamp,
		ProducerID:           NoProducerID,
		ProducerEpoch:        -1,
		BaseSequence:         NoSequence,
		RecordCount:          c.count,
	}
	if c.logAppendTime {
		// Validation then refuses it, as Kafka refuses a producer's
		// LogAppendTime.
		h.Attributes |= TimestampTypeBit
	}
	return assemble(make([]byte, 0, HeaderSize+len(c.raw)), &h, c.raw, codecs)
}
