package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrMalformed is returned for a header that does not decode.
var ErrMalformed = errors.New("protocol: malformed request header")

// ApiVersionsKey is the one key whose response header is always v0 and whose
// unknown versions still get an answer (KIP-511).
const ApiVersionsKey = 18

// RequestHeader is a decoded request header.
type RequestHeader struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string
	// Flexible reports header v2: tagged fields follow the client id.
	Flexible bool
}

// ParseRequestHeader decodes the header at the start of frame and returns it
// with the body that follows. Whether the header has tagged fields depends on
// the key and version, so unknown keys decode as header v1; the caller then
// closes the connection anyway.
func ParseRequestHeader(frame []byte) (RequestHeader, []byte, error) {
	return ParseRequestHeaderReusing(frame, nil)
}

// ParseRequestHeaderReusing is ParseRequestHeader that returns prev as the
// client id when the frame's client id equals *prev: a connection sends the
// same client id in every request, and a new string for each was two
// allocations per request.
func ParseRequestHeaderReusing(frame []byte, prev *string) (RequestHeader, []byte, error) {
	var h RequestHeader
	if len(frame) < MinFrameSize {
		return h, nil, fmt.Errorf("%w: %d bytes", ErrMalformed, len(frame))
	}
	h.Key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[8:]
	h.Flexible = headerIsFlexible(h.Key, h.Version)
	// ControlledShutdown v0 is the one request with header v0: no client id.
	if h.Key == 7 && h.Version == 0 {
		return h, rest, nil
	}
	if len(rest) < 2 {
		return h, nil, fmt.Errorf("%w: no client id", ErrMalformed)
	}
	n := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	switch {
	case n == -1:
	case n < -1 || int(n) > len(rest):
		return h, nil, fmt.Errorf("%w: client id length %d", ErrMalformed, n)
	case prev != nil && *prev == string(rest[:n]): // compared without a copy
		h.ClientID = prev
		rest = rest[n:]
	default:
		id := string(rest[:n])
		h.ClientID = &id
		rest = rest[n:]
	}
	if h.Flexible {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return h, nil, err
		}
	}
	return h, rest, nil
}

// headerIsFlexible reports whether (key, version) uses request header v2.
// ApiVersions versions above the maximum are flexible too: KIP-511 lets a
// newer client send its newest version and read the broker's v0 answer.
// It reads a table built once from kmsg, since a kmsg request made per
// header to ask would be an allocation per request.
func headerIsFlexible(key, version int16) bool {
	if key < 0 || int(key) > kmsg.MaxKey {
		return false
	}
	v := requestVersions()[key]
	switch {
	case !v.known:
		return false
	case key == ApiVersionsKey && version > v.max:
		return true
	case version < 0 || version > v.max:
		return false
	}
	return version >= v.flexibleFrom
}

// keyVersions is what headerIsFlexible needs of one request key: its
// highest version in kmsg and its first flexible one (past max when none;
// a key's versions are flexible from one on).
type keyVersions struct {
	known             bool
	max, flexibleFrom int16
}

// requestVersions is built on first use and never changed after.
var requestVersions = sync.OnceValue(func() *[kmsg.MaxKey + 1]keyVersions {
	var t [kmsg.MaxKey + 1]keyVersions
	for key := range t {
		req := kmsg.RequestForKey(int16(key))
		if req == nil {
			continue
		}
		v := keyVersions{known: true, max: req.MaxVersion(), flexibleFrom: req.MaxVersion() + 1}
		for version := v.max; version >= 0; version-- {
			req.SetVersion(version)
			if !req.IsFlexible() {
				break
			}
			v.flexibleFrom = version
		}
		t[key] = v
	}
	return &t
})

// skipTags skips a tagged-field section: a uvarint count, then per field a
// uvarint tag, a uvarint size and that many bytes.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, fmt.Errorf("%w: tagged field count", ErrMalformed)
	}
	b = b[n:]
	for i := uint64(0); i < count; i++ {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, fmt.Errorf("%w: tag", ErrMalformed)
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, fmt.Errorf("%w: tagged field size", ErrMalformed)
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// AppendResponse appends a complete response frame (size, header, body) to
// dst. The header is v1 (with an empty tagged-field section) when the body's
// version is flexible, except for ApiVersions.
func AppendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != ApiVersionsKey {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
