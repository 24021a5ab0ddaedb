package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// frameOf encodes req at version v the way a client does, without the size.
func frameOf(t testing.TB, req kmsg.Request, v int16, clientID string) []byte {
	t.Helper()
	req.SetVersion(v)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	b := f.AppendRequest(nil, req, 42)
	return b[4:]
}

func TestParseRequestHeaderRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		req      kmsg.Request
		version  int16
		flexible bool
	}{
		{"metadata v0", kmsg.NewPtrMetadataRequest(), 0, false},
		{"metadata v9 flexible", kmsg.NewPtrMetadataRequest(), 9, true},
		{"produce v3", kmsg.NewPtrProduceRequest(), 3, false},
		{"produce v9 flexible", kmsg.NewPtrProduceRequest(), 9, true},
		{"apiversions v3 flexible", kmsg.NewPtrApiVersionsRequest(), 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := frameOf(t, tt.req, tt.version, "client-1")
			h, body, err := ParseRequestHeader(frame)
			if err != nil {
				t.Fatal(err)
			}
			if h.Key != tt.req.Key() || h.Version != tt.version || h.CorrelationID != 42 || h.Flexible != tt.flexible {
				t.Fatalf("header %+v", h)
			}
			if h.ClientID == nil || *h.ClientID != "client-1" {
				t.Fatalf("client id %v", h.ClientID)
			}
			got := kmsg.RequestForKey(h.Key)
			got.SetVersion(h.Version)
			if err := got.ReadFrom(body); err != nil {
				t.Fatalf("body does not decode: %v", err)
			}
		})
	}
}

func TestApiVersionsAboveMaxIsFlexible(t *testing.T) {
	// A client newer than kmsg sends ApiVersions v99 with header v2.
	frame := []byte{0, 18, 0, 99, 0, 0, 0, 7, 0, 1, 'c', 0}
	h, body, err := ParseRequestHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Flexible || h.Version != 99 || len(body) != 0 {
		t.Fatalf("header %+v body %v", h, body)
	}
}

func TestParseRequestHeaderRejectsGarbage(t *testing.T) {
	tests := map[string][]byte{
		"short":              {0, 3},
		"client id too long": {0, 3, 0, 1, 0, 0, 0, 1, 0, 50, 'a'},
		"negative client id": {0, 3, 0, 1, 0, 0, 0, 1, 0x80, 0},
		"bad tags":           {0, 3, 0, 9, 0, 0, 0, 1, 0, 0, 5, 1, 200},
	}
	for name, frame := range tests {
		if _, _, err := ParseRequestHeader(frame); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
}

func TestReadFrame(t *testing.T) {
	var in bytes.Buffer
	in.Write(binary.BigEndian.AppendUint32(nil, 10))
	in.Write(make([]byte, 10))
	in.Write(binary.BigEndian.AppendUint32(nil, 7)) // below minimum
	f, err := ReadFrame(&in, nil, 100)
	if err != nil || len(f) != 10 {
		t.Fatalf("frame %d bytes, err %v", len(f), err)
	}
	if _, err := ReadFrame(&in, nil, 100); !errors.Is(err, ErrFrameSize) {
		t.Fatalf("err %v, want ErrFrameSize", err)
	}
	big := bytes.NewReader(binary.BigEndian.AppendUint32(nil, 101))
	if _, err := ReadFrame(big, nil, 100); !errors.Is(err, ErrFrameSize) {
		t.Fatalf("err %v, want ErrFrameSize", err)
	}
	neg := bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff})
	if _, err := ReadFrame(neg, nil, 100); !errors.Is(err, ErrFrameSize) {
		t.Fatalf("err %v, want ErrFrameSize", err)
	}
	cut := bytes.NewReader(append(binary.BigEndian.AppendUint32(nil, 20), 1, 2, 3))
	if _, err := ReadFrame(cut, nil, 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want unexpected EOF", err)
	}
}

func TestAppendResponseHeaders(t *testing.T) {
	md := kmsg.NewPtrMetadataResponse()
	md.SetVersion(9)
	b := AppendResponse(nil, 5, md)
	if got := binary.BigEndian.Uint32(b); int(got) != len(b)-4 {
		t.Fatalf("size %d, frame %d", got, len(b)-4)
	}
	if b[8] != 0 {
		t.Fatalf("flexible response lacks the empty tag section")
	}
	// ApiVersions keeps header v0 even when flexible.
	av := kmsg.NewPtrApiVersionsResponse()
	av.SetVersion(3)
	b = AppendResponse(nil, 5, av)
	got := kmsg.NewPtrApiVersionsResponse()
	got.SetVersion(3)
	if err := got.ReadFrom(b[8:]); err != nil {
		t.Fatalf("ApiVersions body right after the correlation id: %v", err)
	}
}

func TestReadResponseFrameAllowsSmallFrames(t *testing.T) {
	// A v0 Heartbeat answer: correlation id and error code, 6 bytes.
	in := append(binary.BigEndian.AppendUint32(nil, 6), 0, 0, 0, 1, 0, 0)
	f, err := ReadResponseFrame(bytes.NewReader(in), nil, 100)
	if err != nil || len(f) != 6 {
		t.Fatalf("frame %d bytes, err %v", len(f), err)
	}
	if _, err := ReadResponseFrame(bytes.NewReader(binary.BigEndian.AppendUint32(nil, 3)), nil, 100); !errors.Is(err, ErrFrameSize) {
		t.Fatalf("3-byte response frame: err %v, want ErrFrameSize", err)
	}
}
