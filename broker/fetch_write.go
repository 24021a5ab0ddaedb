package broker

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
)

// writeFetch writes a fetch response frame whose record sets are file
// regions: the framing from encodeFetch, the records by sendRegion, or,
// when they are few (inlineFetchBytes), read into the frame and written
// with it. buf is scratch space, returned for reuse.
func writeFetch(nc net.Conn, buf []byte, correlationID int32, resp *kmsg.FetchResponse, regions [][]log.Slice) ([]byte, error) {
	buf = append(buf[:0], 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(correlationID))
	if resp.IsFlexible() {
		buf = append(buf, 0)
	}
	chunks := encodeFetch(buf, resp, regions)
	size, records := 0, 0
	for _, c := range chunks {
		size += len(c.bytes) + int(c.region.Size)
		records += int(c.region.Size)
	}
	binary.BigEndian.PutUint32(chunks[0].bytes, uint32(size-4))
	if records > 0 && records <= inlineFetchBytes {
		return writeFetchInline(nc, chunks, size)
	}
	if len(chunks) > 1 {
		cork(nc, true)
		defer cork(nc, false)
	}
	for _, c := range chunks {
		if _, err := nc.Write(c.bytes); err != nil {
			return buf, err
		}
		if c.region.Size > 0 {
			if err := sendRegion(nc, c.region); err != nil {
				return buf, err
			}
		}
	}
	return chunks[0].bytes[:0], nil
}

// writeFetchInline writes a response with few bytes of records as one
// frame: the chunks and their regions read after them, past the encoded
// chunks. A write and a pread per region cost fewer
// system calls than a write per chunk and a sendfile per region between
// two TCP_CORK calls, and the copy is small. It returns the buffer, for
// reuse.
func writeFetchInline(nc net.Conn, chunks []fetchChunk, size int) ([]byte, error) {
	// The encoder appended the chunks one after the other, to a new array
	// whenever one filled: the space after the last one is free.
	last := chunks[len(chunks)-1].bytes
	frame := slices.Grow(last[len(last):], size)
	for _, c := range chunks {
		frame = append(frame, c.bytes...)
		var err error
		if frame, err = c.region.ReadInto(frame); err != nil {
			return frame[:0], fmt.Errorf("read fetch region: %w", err)
		}
	}
	_, err := nc.Write(frame)
	return frame[:0], err
}

// copyRegion sends a region through a buffer, for connections that are not
// plain sockets.
func copyRegion(nc net.Conn, s log.Slice) error {
	b, err := s.ReadInto(make([]byte, 0, s.Size))
	if err != nil {
		return fmt.Errorf("read fetch region: %w", err)
	}
	_, err = nc.Write(b)
	return err
}

// inlineFetchBytes: a fetch response carrying at most this many bytes of
// records reads them into its frame and goes out in one write.
const inlineFetchBytes = 64 << 10
