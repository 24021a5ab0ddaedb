package broker

import (
	"net"
	"syscall"
	"testing"
)

func sockopt(t *testing.T, c *net.TCPConn, opt int) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var serr error
	if err := rc.Control(func(fd uintptr) { v, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, opt) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return v
}

// acceptedConn returns the server side of a fresh loopback connection.
func acceptedConn(t *testing.T) *net.TCPConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	return sc.(*net.TCPConn)
}

// The sizes reach the socket (Linux reports twice the size set, for its
// bookkeeping); -1 leaves the default alone.
func TestSetSocketBuffers(t *testing.T) {
	plain := acceptedConn(t)
	defSnd, defRcv := sockopt(t, plain, syscall.SO_SNDBUF), sockopt(t, plain, syscall.SO_RCVBUF)
	if err := setSocketBuffers(plain, -1, -1); err != nil {
		t.Fatal(err)
	}
	if s, r := sockopt(t, plain, syscall.SO_SNDBUF), sockopt(t, plain, syscall.SO_RCVBUF); s != defSnd || r != defRcv {
		t.Errorf("-1 changed the buffers: send %d->%d receive %d->%d", defSnd, s, defRcv, r)
	}
	const send, recv = 24576, 20480
	c := acceptedConn(t)
	if err := setSocketBuffers(c, send, recv); err != nil {
		t.Fatal(err)
	}
	if s := sockopt(t, c, syscall.SO_SNDBUF); s != send && s != 2*send {
		t.Errorf("SO_SNDBUF = %d after socket.send.buffer.bytes=%d", s, send)
	}
	if r := sockopt(t, c, syscall.SO_RCVBUF); r != recv && r != 2*recv {
		t.Errorf("SO_RCVBUF = %d after socket.receive.buffer.bytes=%d", r, recv)
	}
}

// The broker's listeners size what they accept.
func TestSizedListener(t *testing.T) {
	tb := startBroker(t, map[string]string{"socket.send.buffer.bytes": "24576", "socket.receive.buffer.bytes": "20480"})
	if _, ok := tb.b.listeners[0].ln.(sizedListener); !ok {
		t.Fatalf("listener %T does not size its connections", tb.b.listeners[0].ln)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sl := sizedListener{ln, tb.b}
	defer sl.Close()
	cc, err := net.Dial("tcp", sl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	nc, err := sl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := nc.(*net.TCPConn)
	if s := sockopt(t, c, syscall.SO_SNDBUF); s != 24576 && s != 2*24576 {
		t.Errorf("SO_SNDBUF = %d from the broker's listener, want socket.send.buffer.bytes=24576", s)
	}
	if r := sockopt(t, c, syscall.SO_RCVBUF); r != 20480 && r != 2*20480 {
		t.Errorf("SO_RCVBUF = %d from the broker's listener, want socket.receive.buffer.bytes=20480", r)
	}
}
