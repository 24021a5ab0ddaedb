package protocol

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestParseRequestHeaderAllocations checks that parsing a header costs no
// allocation beyond its client id: it is paid on every request.
func TestParseRequestHeaderAllocations(t *testing.T) {
	for _, tc := range []struct {
		key, version int16
	}{{0, 9}, {0, 3}, {1, 12}, {1, 4}, {ApiVersionsKey, 3}} {
		frame := binary.BigEndian.AppendUint16(nil, uint16(tc.key))
		frame = binary.BigEndian.AppendUint16(frame, uint16(tc.version))
		frame = binary.BigEndian.AppendUint32(frame, 7)
		frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
		frame = append(frame, 0, 0, 0, 0)                    // tags and some body
		if allocs := testing.AllocsPerRun(100, func() {
			if _, _, err := ParseRequestHeader(frame); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Errorf("%s v%d: %v allocations per header, want 0", kmsg.NameForKey(tc.key), tc.version, allocs)
		}
	}
}

// TestHeaderIsFlexibleMatchesKmsg checks the flexibility table against
// kmsg's requests, every key and version, and the versions around them.
func TestHeaderIsFlexibleMatchesKmsg(t *testing.T) {
	for key := int16(-1); key <= kmsg.MaxKey+1; key++ {
		for version := int16(-2); version <= 40; version++ {
			want := false
			if req := kmsg.RequestForKey(key); req != nil {
				switch {
				case key == ApiVersionsKey && version > req.MaxVersion():
					want = true
				case version >= 0 && version <= req.MaxVersion():
					req.SetVersion(version)
					want = req.IsFlexible()
				}
			}
			if got := headerIsFlexible(key, version); got != want {
				t.Errorf("headerIsFlexible(%d, %d) = %v, want %v", key, version, got, want)
			}
		}
	}
}

// TestParseRequestHeaderReusesClientID: a client id equal to the previous
// one is that string again, with no allocation; a different one is read.
func TestParseRequestHeaderReusesClientID(t *testing.T) {
	frameWith := func(id string) []byte {
		frame := binary.BigEndian.AppendUint16(nil, 0)
		frame = binary.BigEndian.AppendUint16(frame, 3)
		frame = binary.BigEndian.AppendUint32(frame, 7)
		frame = binary.BigEndian.AppendUint16(frame, uint16(len(id)))
		return append(append(frame, id...), 0, 0, 0, 0)
	}
	prev := "producer-1"
	h, _, err := ParseRequestHeaderReusing(frameWith("producer-1"), &prev)
	if err != nil || h.ClientID != &prev {
		t.Fatalf("same client id: %v, %v; want the previous pointer", h.ClientID, err)
	}
	h, _, err = ParseRequestHeaderReusing(frameWith("producer-2"), &prev)
	if err != nil || h.ClientID == nil || *h.ClientID != "producer-2" || prev != "producer-1" {
		t.Fatalf("other client id: %v, %v (previous now %q)", h.ClientID, err, prev)
	}
	frame := frameWith("producer-1")
	if allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := ParseRequestHeaderReusing(frame, &prev); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations for a repeated client id, want 0", allocs)
	}
}
