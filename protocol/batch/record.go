package batch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Record is one record of a v2 batch, as the records section encodes it:
//
//	length          varint  (bytes after this field)
//	attributes      int8    (unused, 0)
//	timestampDelta  varlong (from the batch's baseTimestamp)
//	offsetDelta     varint  (from the batch's baseOffset)
//	keyLength       varint  (-1: null key)
//	key             bytes
//	valueLength     varint  (-1: null value)
//	value           bytes
//	headerCount     varint
//	headers         headerCount times: keyLength varint (>= 0), key,
//	                valueLength varint (-1: null), value
//
// Varints are zig-zag encoded as in protobuf.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	// Key and Value are nil when null, which differs from empty.
	Key     []byte
	Value   []byte
	Headers []RecordHeader
}

// RecordHeader is a record header; Kafka requires a non-null key.
type RecordHeader struct {
	Key   string
	Value []byte
}

// maxVarintLen32 and maxVarintLen64 are the longest varints Kafka reads.
const (
	maxVarintLen32 = 5
	maxVarintLen64 = 10
)

// source feeds the record parser either from a byte slice (uncompressed
// batches, or a record body already read) or from a decompressing stream.
// Parsing a stream lets Validate walk compressed records without holding the
// decompressed payload, as Kafka's skipKeyValueIterator does.
type source struct {
	buf []byte // slice mode
	pos int    // slice mode: next byte

	r     *bufio.Reader // stream mode when non-nil
	n     int64         // stream mode: bytes consumed
	limit int64         // stream mode: most bytes the stream may yield
}

func (s *source) offset() int64 {
	if s.r == nil {
		return int64(s.pos)
	}
	return s.n
}

// errUncompressedLimit is wrapped when a stream yields more than its limit.
func (s *source) limitErr() error {
	return fmt.Errorf("%w: records decompress to more than %d bytes", ErrMessageTooLarge, s.limit)
}

// streamErr classifies an error of the decompressing reader: the stream
// ending early is a record-structure problem (Kafka: "premature EOF"), any
// other failure means the compressed payload is garbage.
func streamErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return invalidf("records end before the declared count (premature EOF)")
	}
	return fmt.Errorf("%w: decompress records: %w", ErrInvalidRecord, err)
}

func (s *source) readByte() (byte, error) {
	if s.r == nil {
		if s.pos >= len(s.buf) {
			return 0, invalidf("records end before the declared count (premature EOF)")
		}
		c := s.buf[s.pos]
		s.pos++
		return c, nil
	}
	if s.n >= s.limit {
		return 0, s.limitErr()
	}
	c, err := s.r.ReadByte()
	if err != nil {
		return 0, streamErr(err)
	}
	s.n++
	return c, nil
}

// take consumes n bytes. With keep it returns them: a subslice in slice
// mode, a fresh copy in stream mode; without keep, stream mode discards them.
func (s *source) take(n int, keep bool) ([]byte, error) {
	if s.r == nil {
		if n > len(s.buf)-s.pos {
			return nil, invalidf("field of %d bytes runs past the records", n)
		}
		b := s.buf[s.pos : s.pos+n : s.pos+n]
		s.pos += n
		return b, nil
	}
	if int64(n) > s.limit-s.n {
		return nil, s.limitErr()
	}
	if !keep {
		d, err := s.r.Discard(n)
		s.n += int64(d)
		if err != nil {
			return nil, streamErr(err)
		}
		return nil, nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(s.r, b); err != nil {
		return nil, streamErr(err)
	}
	s.n += int64(n)
	return b, nil
}

// atEnd reports whether the source holds no more bytes.
func (s *source) atEnd() (bool, error) {
	if s.r == nil {
		return s.pos == len(s.buf), nil
	}
	_, err := s.r.ReadByte()
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	if err != nil {
		return false, streamErr(err)
	}
	return false, nil
}

func (s *source) uvarint(maxLen int) (uint64, error) {
	var x uint64
	for i := 0; i < maxLen; i++ {
		c, err := s.readByte()
		if err != nil {
			return 0, err
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, nil
		}
	}
	return 0, invalidf("varint longer than %d bytes", maxLen)
}

func (s *source) varint() (int32, error) {
	u, err := s.uvarint(maxVarintLen32)
	if err != nil {
		return 0, err
	}
	v := uint32(u)
	return int32(v>>1) ^ -int32(v&1), nil
}

func (s *source) varlong() (int64, error) {
	u, err := s.uvarint(maxVarintLen64)
	if err != nil {
		return 0, err
	}
	return int64(u>>1) ^ -int64(u&1), nil
}

// bytesField reads a varint length and that many bytes; a negative length
// is null, as Kafka's Utils.readBytes treats it. end bounds the field to the
// current record.
func (s *source) bytesField(end int64, keep bool) (b []byte, null bool, err error) {
	n, err := s.varint()
	if err != nil {
		return nil, false, err
	}
	if n < 0 {
		return nil, true, nil
	}
	if int64(n) > end-s.offset() {
		return nil, false, invalidf("field of %d bytes runs past its record", n)
	}
	b, err = s.take(int(n), keep)
	if keep && b == nil {
		b = []byte{}
	}
	return b, false, err
}

// readRecord parses one record with Kafka's DefaultRecord rules. Without
// keep, key, value and headers are skipped and left empty in rec.
func (s *source) readRecord(keep bool) (rec Record, hasKey bool, err error) {
	length, err := s.varint()
	if err != nil {
		return rec, false, err
	}
	if length < 0 {
		return rec, false, invalidf("negative record length %d", length)
	}
	if s.r != nil && keep {
		// Kafka reads a compressed record's body into its own buffer;
		// doing the same bounds every field to the body for free.
		body, err := s.take(int(length), true)
		if err != nil {
			return rec, false, err
		}
		sub := source{buf: body}
		return sub.recordBody(int64(length), true)
	}
	return s.recordBody(int64(length), keep)
}

func (s *source) recordBody(length int64, keep bool) (rec Record, hasKey bool, err error) {
	start := s.offset()
	end := start + length
	if s.r == nil && end > int64(len(s.buf)) {
		return rec, false, invalidf("record of %d bytes runs past the records", length)
	}
	c, err := s.readByte()
	if err != nil {
		return rec, false, err
	}
	rec.Attributes = int8(c)
	if rec.TimestampDelta, err = s.varlong(); err != nil {
		return rec, false, err
	}
	if rec.OffsetDelta, err = s.varint(); err != nil {
		return rec, false, err
	}
	var null bool
	if rec.Key, null, err = s.bytesField(end, keep); err != nil {
		return rec, false, err
	}
	hasKey = !null
	if rec.Value, _, err = s.bytesField(end, keep); err != nil {
		return rec, false, err
	}
	count, err := s.varint()
	if err != nil {
		return rec, false, err
	}
	if count < 0 {
		return rec, false, invalidf("invalid number of record headers %d", count)
	}
	// Every header takes at least two bytes, so a count beyond what is left
	// of the record is a lie; checking first bounds the allocation.
	if int64(count) > end-s.offset() {
		return rec, false, invalidf("%d record headers in %d bytes", count, end-s.offset())
	}
	if keep && count > 0 {
		rec.Headers = make([]RecordHeader, 0, min(int64(count), (end-s.offset())/2))
	}
	for i := int32(0); i < count; i++ {
		k, null, err := s.bytesField(end, keep)
		if err != nil {
			return rec, false, err
		}
		if null {
			return rec, false, invalidf("record header %d has a null key", i)
		}
		v, _, err := s.bytesField(end, keep)
		if err != nil {
			return rec, false, err
		}
		if keep {
			rec.Headers = append(rec.Headers, RecordHeader{Key: string(k), Value: v})
		}
	}
	if got := s.offset() - start; got != length {
		return rec, false, invalidf("record length %d, fields take %d bytes", length, got)
	}
	return rec, hasKey, nil
}
