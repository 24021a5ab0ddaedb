package batch

import (
	"fmt"
	"io"
)

// Recompress returns the batch at the start of b with its records encoded
// with codec to instead, as Kafka does when a topic's compression.type is
// neither "producer" nor the batch's codec. The records section is the same
// byte stream under any codec, so offset deltas, timestamps and headers are
// kept exactly; so are all header fields but the codec bits, the length and
// the CRC. When the codec already matches, b's batch is returned as is.
// The batch should have passed Validate: records are not parsed here.
func Recompress(b []byte, to Compression, codecs *Codecs) ([]byte, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if len(b) < h.Size() {
		return nil, ErrTruncated
	}
	if !to.Valid() {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedCompression, to)
	}
	from := h.Compression()
	if from == to {
		return b[:h.Size()], nil
	}
	if !from.Valid() {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedCompression, from)
	}
	if codecs == nil {
		codecs = MustCodecs()
	}
	raw := b[HeaderSize:h.Size()]
	if from != None {
		if raw, err = codecs.Decompress(nil, raw, from, DefaultMaxUncompressedBytes); err != nil {
			return nil, fmt.Errorf("recompress %s to %s: %w", from, to, err)
		}
	}
	h.Attributes = h.Attributes&^CompressionMask | int16(to)
	out, err := assemble(make([]byte, 0, HeaderSize+len(raw)/2), &h, raw, codecs)
	if err != nil {
		return nil, fmt.Errorf("recompress %s to %s: %w", from, to, err)
	}
	return out, nil
}

// Renumber returns the batch at the start of b rebuilt with offset deltas
// 0..count-1 and codec to, as Kafka's LogValidator rebuilds a compressed
// batch whose inner offsets are not in order (Check reports it). Timestamps,
// keys, values, headers and the producer fields are kept.
func Renumber(b []byte, to Compression, codecs *Codecs) ([]byte, error) {
	r, err := Records(b, codecs)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	h := r.Header()
	var raw []byte
	var i int32
	for ; ; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("renumber: %w", err)
		}
		rec.OffsetDelta = i
		if raw, err = appendRecord(raw, &rec); err != nil {
			return nil, fmt.Errorf("renumber: %w", err)
		}
	}
	h.LastOffsetDelta = i - 1
	h.Attributes = h.Attributes&^CompressionMask | int16(to)
	return assemble(nil, &h, raw, codecs)
}
