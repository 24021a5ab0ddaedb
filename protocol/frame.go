package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// MinFrameSize is the smallest request frame that can hold a header
// (api_key, api_version, correlation_id).
const MinFrameSize = 8

// ErrFrameSize is returned for a size prefix below MinFrameSize or above the
// configured maximum (socket.request.max.bytes); Kafka closes the connection.
var ErrFrameSize = errors.New("protocol: invalid frame size")

// MinResponseFrameSize is the smallest response frame: a correlation id
// (a v0 Heartbeat answer is 6 bytes).
const MinResponseFrameSize = 4

// ReadFrame reads one size-prefixed request frame from r into buf (reused
// when large enough) and returns the frame's bytes without the prefix.
func ReadFrame(r io.Reader, buf []byte, maxSize int32) ([]byte, error) {
	return readFrame(r, buf, MinFrameSize, maxSize)
}

// ReadTokenFrame reads a frame of a SASL connection, which may be a raw
// SASL token (after SaslHandshake v0) of any size: no lower bound.
func ReadTokenFrame(r io.Reader, buf []byte, maxSize int32) ([]byte, error) {
	return readFrame(r, buf, 0, maxSize)
}

// ReadResponseFrame reads one size-prefixed response frame, as ReadFrame
// does for requests.
func ReadResponseFrame(r io.Reader, buf []byte, maxSize int32) ([]byte, error) {
	return readFrame(r, buf, MinResponseFrameSize, maxSize)
}

func readFrame(r io.Reader, buf []byte, minSize, maxSize int32) ([]byte, error) {
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(prefix[:]))
	if size < minSize || size > maxSize {
		return nil, fmt.Errorf("%w: %d (allowed %d..%d)", ErrFrameSize, size, minSize, maxSize)
	}
	if cap(buf) >= int(size) {
		buf = buf[:size]
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, frameReadError(size, err)
		}
		return buf, nil
	}
	// The size is the peer's word: grow the buffer as the bytes arrive,
	// doubling from frameChunk, so that a prefix alone costs no more than
	// frameChunk and a whole frame at most twice its size in allocations.
	buf = buf[:0]
	for len(buf) < int(size) {
		n := min(int(size)-len(buf), max(len(buf), frameChunk))
		buf = slices.Grow(buf, n)
		if _, err := io.ReadFull(r, buf[len(buf):len(buf)+n]); err != nil {
			return nil, frameReadError(size, err)
		}
		buf = buf[:len(buf)+n]
	}
	return buf, nil
}

// frameChunk is the first allocation for a frame larger than the buffer
// at hand.
const frameChunk = 64 << 10

func frameReadError(size int32, err error) error {
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read frame of %d bytes: %w", size, err)
}
