package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// readyPoll is the pause between readiness probes. Cold start is read off
// the first successful probe, so the pause bounds its error; a target of
// 50 ms needs well under that.
const readyPoll = time.Millisecond

// probeTimeout bounds one dial-write-read round trip of a probe.
const probeTimeout = 2 * time.Second

// apiVersionsCorrelationID tags the probe so a stray answer is caught.
const apiVersionsCorrelationID = 0x62726f6f

// errProbeAnswer marks an ApiVersions answer that is not a success.
var errProbeAnswer = errors.New("brook-bench: bad ApiVersions answer")

// apiVersionsV0 is an ApiVersions v0 request frame: header v1 (key 18,
// version 0, correlation id, null client id) and an empty body. Every
// Kafka release and Brook serve v0, and its answer needs no client-side
// version negotiation, which a client library would add to the timing.
func apiVersionsV0() []byte {
	frame := make([]byte, 4+2+2+4+2)
	binary.BigEndian.PutUint32(frame[0:], uint32(len(frame)-4))
	binary.BigEndian.PutUint16(frame[4:], 18)
	binary.BigEndian.PutUint16(frame[6:], 0)
	binary.BigEndian.PutUint32(frame[8:], apiVersionsCorrelationID)
	binary.BigEndian.PutUint16(frame[12:], 0xffff) // null client id
	return frame
}

// probeAPIVersions sends one ApiVersions v0 request to addr and checks the
// answer: the right correlation id and error code 0.
func probeAPIVersions(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := conn.Write(apiVersionsV0()); err != nil {
		return fmt.Errorf("write ApiVersions: %w", err)
	}
	// Size, correlation id (response header v0) and error code are all a
	// probe needs; the rest of the body is left unread.
	var head [4 + 4 + 2]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil {
		return fmt.Errorf("read ApiVersions answer: %w", err)
	}
	size := binary.BigEndian.Uint32(head[0:])
	corr := binary.BigEndian.Uint32(head[4:])
	code := int16(binary.BigEndian.Uint16(head[8:]))
	switch {
	case size < 6:
		return fmt.Errorf("%w: size %d", errProbeAnswer, size)
	case corr != apiVersionsCorrelationID:
		return fmt.Errorf("%w: correlation id %#x", errProbeAnswer, corr)
	case code != 0:
		return fmt.Errorf("%w: error code %d", errProbeAnswer, code)
	}
	return nil
}

// waitReady probes addr every readyPoll until it answers, exited closes or
// ctx ends, and returns when the successful answer arrived.
func waitReady(ctx context.Context, addr string, exited <-chan struct{}) (time.Time, error) {
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		err := probeAPIVersions(ctx, addr)
		if err == nil {
			return time.Now(), nil
		}
		select {
		case <-exited:
			return time.Time{}, errors.New("server exited before answering ApiVersions")
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("server at %s not ready: %w (last: %v)", addr, ctx.Err(), err)
		case <-tick.C:
		}
	}
}
