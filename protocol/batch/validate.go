package batch

import "fmt"

// ValidateOptions are the topic's rules a produced batch must meet.
type ValidateOptions struct {
	// MaxMessageBytes is max.message.bytes: the largest batch accepted.
	MaxMessageBytes int32
	// KeyRequired is set for compacted topics: every record needs a key.
	KeyRequired bool
}

// Validate checks that b holds exactly one complete, well-formed v2 batch as
// a producer sent it: header, CRC, and (streaming through any compression)
// every inner record. It returns the header.
//
// Initial version: header and CRC only; inner-record checks follow.
func Validate(b []byte, opts ValidateOptions) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Size() != len(b) {
		return h, fmt.Errorf("%w: batch length %d, %d bytes present", ErrCorrupt, h.Size(), len(b))
	}
	return h, CheckCRC(b, &h)
}
