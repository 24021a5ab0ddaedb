package broker

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/protocol"
)

// maxInFlight bounds the requests of one connection that are decoded and
// applied but not yet answered. Clients pipeline at most 5 per connection
// by default; the bound keeps a misbehaving client from queueing without
// limit, since the reader stops reading when it is reached.
const maxInFlight = 16

// pending is one request's place in the connection's response order.
type pending struct {
	correlationID int32
	reply         reply
	// done is closed when reply.resp is final; nil when it was ready at once.
	done chan struct{}
}

// conn serves one client connection: a reader that decodes and applies
// requests in arrival order, and a writer that sends responses in that order.
type conn struct {
	b        *Broker
	nc       net.Conn
	listener string
	// clientHost is the peer's address as Kafka shows it in group
	// descriptions: "/" and the IP.
	clientHost string
	logger     *slog.Logger
	out        chan *pending
}

func (b *Broker) serveConn(ctx context.Context, nc net.Conn, listener string) {
	// Waits (JoinGroup, long polls, acks=all) end when their connection
	// does: nobody is left to answer.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &conn{
		b:          b,
		nc:         nc,
		listener:   listener,
		clientHost: "/" + hostOf(nc.RemoteAddr()),
		logger:     b.logger.With("remote", nc.RemoteAddr().String()),
		out:        make(chan *pending, maxInFlight),
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	err := c.readLoop(ctx)
	close(c.out)
	<-writerDone
	nc.Close()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		c.logger.Debug("connection closed", "err", err)
	}
}

// readLoop reads, decodes and applies requests until the connection ends,
// a request is bad, or the broker shuts down (then it stops reading and
// lets the writer finish what is in flight).
func (c *conn) readLoop(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { c.nc.SetReadDeadline(time.Now()) })
	defer stop()
	r := bufio.NewReaderSize(c.nc, 16<<10)
	var buf []byte
	for {
		frame, err := protocol.ReadFrame(r, buf, c.b.cfg.SocketRequestMaxBytes)
		if err != nil {
			return err
		}
		p, err := c.apply(ctx, frame)
		if err != nil {
			return err
		}
		// kmsg's decoded requests point into the frame. Produce and Fetch
		// handlers keep nothing of it once they return (records are written
		// to the log during the call; strings are copies), so their frame
		// is reused; other requests may keep bytes (group metadata), so
		// their frame is left to them.
		buf = nil
		if key := frameKey(frame); (key == produceKey || key == fetchKey) && cap(frame) <= maxReusedFrame {
			buf = frame[:0]
		}
		if p == nil {
			continue
		}
		c.out <- p
		if p.reply.closeConn {
			return fmt.Errorf("closing after failed acks=0 produce")
		}
	}
}

const (
	produceKey = 0
	fetchKey   = 1
	// maxReusedFrame bounds the read buffer a connection keeps between
	// requests, so a single large produce does not stay resident.
	maxReusedFrame = 1 << 20
)

func frameKey(frame []byte) int16 { return int16(binary.BigEndian.Uint16(frame)) }

// apply decodes one frame and runs its handler. A nil pending with a nil
// error never happens; an error closes the connection, as Kafka does for
// unknown keys, unsupported versions and bodies that do not decode.
func (c *conn) apply(ctx context.Context, frame []byte) (p *pending, err error) {
	hdr, body, err := protocol.ParseRequestHeader(frame)
	if err != nil {
		return nil, err
	}
	h, ok := c.b.handlers[hdr.Key]
	if !ok {
		return nil, fmt.Errorf("unsupported api key %d", hdr.Key)
	}
	if hdr.Version < h.min || hdr.Version > h.max {
		if hdr.Key == protocol.ApiVersionsKey && hdr.Version > h.max {
			return &pending{correlationID: hdr.CorrelationID, reply: reply{resp: c.b.unsupportedApiVersions()}}, nil
		}
		return nil, fmt.Errorf("unsupported version %d of %s", hdr.Version, kmsg.NameForKey(hdr.Key))
	}
	req := kmsg.RequestForKey(hdr.Key)
	req.SetVersion(hdr.Version)
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode %s v%d: %w", kmsg.NameForKey(hdr.Key), hdr.Version, err)
	}
	r := &request{correlationID: hdr.CorrelationID, listener: c.listener, clientHost: c.clientHost}
	if hdr.ClientID != nil {
		r.clientID = *hdr.ClientID
	}
	// A bug in one handler must cost one connection, not the broker.
	defer func() {
		if v := recover(); v != nil {
			c.logger.Error("handler panic", "api", kmsg.NameForKey(hdr.Key), "version", hdr.Version, "panic", v, "stack", string(debug.Stack()))
			p, err = nil, fmt.Errorf("handler panic: %v", v)
		}
	}()
	rep, err := h.fn(ctx, r, req)
	if err != nil {
		return nil, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(hdr.Key), hdr.Version, err)
	}
	p = &pending{correlationID: hdr.CorrelationID, reply: rep}
	if rep.wait != nil {
		p.done = make(chan struct{})
		go func() {
			defer close(p.done)
			defer func() {
				if v := recover(); v != nil {
					c.logger.Error("handler panic while waiting", "api", kmsg.NameForKey(hdr.Key), "panic", v, "stack", string(debug.Stack()))
					p.reply.resp, p.reply.closeConn = nil, true
				}
			}()
			p.reply.resp = rep.wait()
		}()
	}
	return p, nil
}

// writeLoop writes responses in request order. After a write error it keeps
// draining so that the reader and waiting handlers never block on it.
func (c *conn) writeLoop() {
	var buf []byte
	var failed bool
	for p := range c.out {
		if p.done != nil {
			<-p.done
		}
		if p.reply.closeConn && !failed {
			c.nc.Close()
			failed = true
		}
		if p.reply.none || p.reply.resp == nil || failed {
			continue
		}
		var err error
		if fetch, ok := p.reply.resp.(*kmsg.FetchResponse); ok && p.reply.fetchRegions != nil {
			buf, err = writeFetch(c.nc, buf, p.correlationID, fetch, p.reply.fetchRegions)
		} else {
			buf = protocol.AppendResponse(buf[:0], p.correlationID, p.reply.resp)
			_, err = c.nc.Write(buf)
		}
		if err != nil {
			c.logger.Debug("write response", "err", err)
			failed = true
			c.nc.Close()
		}
		if cap(buf) > 1<<20 {
			buf = nil // do not pin a large response's buffer to an idle connection
		}
	}
}

func hostOf(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	return a.String()
}
