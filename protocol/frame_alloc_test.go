package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
)

// TestReadFrameAllocatesWhatArrives checks that a size prefix alone does not
// make the reader allocate the size it claims: a peer that announces a
// 100 MiB frame and sends ten bytes costs about ten bytes, not 100 MiB per
// connection.
func TestReadFrameAllocatesWhatArrives(t *testing.T) {
	const claimed = 100 << 20
	in := binary.BigEndian.AppendUint32(nil, claimed)
	in = append(in, make([]byte, 10)...)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(bytes.NewReader(in), nil, claimed)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated frame: %v, want unexpected EOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("reading 14 bytes of a frame claiming %d allocated %d bytes", claimed, got)
	}
}

// TestReadFrameLarge reads a whole large frame through small reads.
func TestReadFrameLarge(t *testing.T) {
	body := make([]byte, 3<<20+17)
	for i := range body {
		body[i] = byte(i)
	}
	in := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	got, err := ReadFrame(io.LimitReader(bytes.NewReader(in), int64(len(in))), nil, 8<<20)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("large frame: %v, equal=%v", err, bytes.Equal(got, body))
	}
	reuse := make([]byte, 0, len(body))
	if got, err := ReadFrame(bytes.NewReader(in), reuse, 8<<20); err != nil || &got[0] != &reuse[:1][0] {
		t.Fatalf("a large enough buffer is not reused: %v", err)
	}
}
