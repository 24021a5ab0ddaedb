package broker

import (
	"encoding/binary"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
)

// writeFetch writes a fetch response frame whose record sets are file
// regions: the framing from encodeFetch, the records by sendRegion. buf is
// scratch space, returned for reuse.
func writeFetch(nc net.Conn, buf []byte, correlationID int32, resp *kmsg.FetchResponse, regions [][]log.Slice) ([]byte, error) {
	buf = append(buf[:0], 0, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, uint32(correlationID))
	if resp.IsFlexible() {
		buf = append(buf, 0)
	}
	chunks := encodeFetch(buf, resp, regions)
	size := 0
	for _, c := range chunks {
		size += len(c.bytes) + int(c.region.Size)
	}
	binary.BigEndian.PutUint32(chunks[0].bytes, uint32(size-4))
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
