package broker

import (
	"fmt"
	"net"
)

// sizedListener applies the socket buffer sizes to each connection it
// accepts, so that the accept loop needs no part in it.
type sizedListener struct {
	net.Listener
	b *Broker
}

func (l sizedListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err == nil {
		l.b.applySocketBuffers(nc)
	}
	return nc, err
}

// applySocketBuffers sizes an accepted connection's buffers; a size the
// operating system refuses is logged, and the connection is served anyway.
func (b *Broker) applySocketBuffers(nc net.Conn) {
	if err := setSocketBuffers(nc, b.cfg.SocketSendBufferBytes, b.cfg.SocketReceiveBufferBytes); err != nil {
		b.logger.Warn("socket buffers", "remote", nc.RemoteAddr().String(), "err", err)
	}
}

// setSocketBuffers applies socket.send.buffer.bytes and
// socket.receive.buffer.bytes (SO_SNDBUF, SO_RCVBUF) to an accepted
// connection; -1 keeps the operating system's default, as in Kafka. Kafka
// sets the receive buffer on the listening socket, which accepted sockets
// inherit; setting it on each accepted socket gives them the same size.
func setSocketBuffers(nc net.Conn, send, receive int32) error {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	if send != -1 {
		if err := tc.SetWriteBuffer(int(send)); err != nil {
			return fmt.Errorf("set socket.send.buffer.bytes %d: %w", send, err)
		}
	}
	if receive != -1 {
		if err := tc.SetReadBuffer(int(receive)); err != nil {
			return fmt.Errorf("set socket.receive.buffer.bytes %d: %w", receive, err)
		}
	}
	return nil
}
