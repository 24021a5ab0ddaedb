package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// fakeAnswer is what a fake broker sends back to one ApiVersions probe;
// nil closes the connection without an answer.
type fakeAnswer func(corr uint32) []byte

func answerWith(corr uint32, code int16) []byte {
	b := make([]byte, 4+4+2+4)
	binary.BigEndian.PutUint32(b[0:], uint32(len(b)-4))
	binary.BigEndian.PutUint32(b[4:], corr)
	binary.BigEndian.PutUint16(b[8:], uint16(code))
	return b // an empty api_keys array (length 0) follows the code
}

// serveFake answers each connection on ln with answers[i] for the i-th
// connection (the last one repeating), after checking the request frame.
func serveFake(t *testing.T, ln net.Listener, answers ...fakeAnswer) {
	t.Helper()
	go func() {
		for i := 0; ; i++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			answer := answers[min(i, len(answers)-1)]
			req := make([]byte, 14)
			if _, err := io.ReadFull(conn, req); err != nil {
				conn.Close()
				continue
			}
			if !bytes.Equal(req, apiVersionsV0()) {
				t.Errorf("probe sent %x, want an ApiVersions v0 frame", req)
			}
			if answer != nil {
				_, _ = conn.Write(answer(binary.BigEndian.Uint32(req[8:])))
			}
			conn.Close()
		}
	}()
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func TestAPIVersionsV0Frame(t *testing.T) {
	f := apiVersionsV0()
	want := []byte{0, 0, 0, 10, 0, 18, 0, 0}
	if !bytes.Equal(f[:8], want) {
		t.Errorf("frame starts %x, want size 10, key 18, version 0 (%x)", f[:8], want)
	}
	if got := binary.BigEndian.Uint16(f[12:]); got != 0xffff {
		t.Errorf("client id length %#x, want -1 (null)", got)
	}
}

func TestProbeAPIVersions(t *testing.T) {
	tests := []struct {
		name    string
		answer  fakeAnswer
		wantErr error // nil: success; errProbeAnswer or io.ErrUnexpectedEOF/EOF
	}{
		{"success", func(c uint32) []byte { return answerWith(c, 0) }, nil},
		{"unsupported version", func(c uint32) []byte { return answerWith(c, 35) }, errProbeAnswer},
		{"wrong correlation id", func(c uint32) []byte { return answerWith(c+1, 0) }, errProbeAnswer},
		{"size too small", func(c uint32) []byte { b := answerWith(c, 0); binary.BigEndian.PutUint32(b, 2); return b }, errProbeAnswer},
		{"closed without answer", nil, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln := listen(t)
			serveFake(t, ln, tt.answer)
			err := probeAPIVersions(context.Background(), ln.Addr().String())
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("probe: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("probe error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestWaitReadyRetriesUntilAnswer(t *testing.T) {
	ln := listen(t)
	// Two refusals (closed connections), then an error code, then success.
	serveFake(t, ln, nil, nil, func(c uint32) []byte { return answerWith(c, 35) },
		func(c uint32) []byte { return answerWith(c, 0) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := time.Now()
	ready, err := waitReady(ctx, ln.Addr().String(), nil)
	if err != nil {
		t.Fatalf("waitReady: %v", err)
	}
	if ready.Before(before) {
		t.Errorf("ready time %v is before the wait started (%v)", ready, before)
	}
}

func TestWaitReadyStopsWhenServerExits(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	ln.Close() // nothing listens: every probe is refused
	exited := make(chan struct{})
	close(exited)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := waitReady(ctx, addr, exited); err == nil || ctx.Err() != nil {
		t.Fatalf("waitReady = %v (ctx %v), want the exit reported before the deadline", err, ctx.Err())
	}
}
