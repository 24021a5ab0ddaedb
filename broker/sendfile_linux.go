package broker

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/brook-mq/brook/log"
)

// sendRegion writes a segment file region to the connection with
// sendfile(2), at an explicit offset: Go's own sendfile path uses the file's
// shared offset, which concurrent fetches of one segment would race on.
func sendRegion(nc net.Conn, s log.Slice) error {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return copyRegion(nc, s)
	}
	out, err := sc.SyscallConn()
	if err != nil {
		return copyRegion(nc, s)
	}
	// A file of another log.FS than the operating system's (the
	// simulation's) has no descriptor to send from.
	fc, ok := s.File.(syscall.Conn)
	if !ok {
		return copyRegion(nc, s)
	}
	in, err := fc.SyscallConn()
	if err != nil {
		return fmt.Errorf("sendfile: %w", err)
	}
	offset, remain := s.Pos, int(s.Size)
	var sendErr error
	ctlErr := in.Control(func(infd uintptr) {
		writeErr := out.Write(func(outfd uintptr) bool {
			for remain > 0 {
				n, err := syscall.Sendfile(int(outfd), int(infd), &offset, remain)
				if n > 0 {
					remain -= n
				}
				switch {
				case errors.Is(err, syscall.EAGAIN):
					return false // wait until the socket is writable
				case errors.Is(err, syscall.EINTR):
				case err != nil:
					sendErr = err
					return true
				case n == 0:
					// The file ends before the region: truncated under us.
					sendErr = io.ErrUnexpectedEOF
					return true
				}
			}
			return true
		})
		if sendErr == nil {
			sendErr = writeErr
		}
	})
	if ctlErr != nil {
		return fmt.Errorf("sendfile: %w", ctlErr)
	}
	if sendErr != nil {
		return fmt.Errorf("sendfile %d bytes at %d: %w", s.Size, s.Pos, sendErr)
	}
	return nil
}

// cork holds back partial frames while on, so that a fetch response's
// small framing writes and its sendfile regions leave in full segments
// instead of one short packet per partition header (TCP_CORK).
func cork(nc net.Conn, on bool) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	v := 0
	if on {
		v = 1
	}
	raw.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, v)
	})
}
