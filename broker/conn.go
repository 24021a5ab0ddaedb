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
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/metrics"
	"github.com/brook-mq/brook/protocol"
)

// maxInFlight bounds the requests of one connection that are read but not
// yet answered. Clients pipeline at most 5 per connection by default; the
// bound keeps a misbehaving client from queueing without limit, since the
// reader stops reading when it is reached.
const maxInFlight = 16

// pending is one request's place in the connection's response order.
type pending struct {
	correlationID int32
	reply         reply
	// done is closed when reply.resp is final; nil when it was ready at once.
	done chan struct{}
	// slot and start time the request for its metrics, from when the
	// applier took it to its response written.
	slot  metrics.RequestSlot
	start time.Time
	// req is the request as its handler saw it, allocated with the
	// pending answer.
	req request
	// key is the request's API key, for the log of a panic while its
	// answer waits; waitPanicked is set by such a panic, before done
	// closes: the writer closes the connection instead of answering. (Not
	// reply.closeConn, which the applier reads meanwhile.)
	key          int16
	waitPanicked bool
}

// conn serves one client connection with three jobs: a reader that reads
// frames, so that it sees at once when the peer hangs up; an applier that
// decodes and applies them in arrival order; and a writer that sends
// responses in that order. Requests that wait (long polls, acks=all,
// JoinGroup) wait under the connection's context, which ends as soon as the
// reader stops: nobody is left to answer.
//
// Handing a request from one job to the next wakes a goroutine and parks
// another, which under a producer that waits for each answer cost more
// than applying its batch (a context switch each, on a virtual machine).
// So a job does the next one itself when nothing else waits for it: the
// reader applies a Produce when no applier runs, no other frame waits or
// bytes came with it and the connection is not muted (applyHere; the apply
// is bounded, its acks=all wait runs elsewhere, and Kafka's network thread
// does not even read a connection's next request before answering); and the
// applier writes an answer that is ready, and the only one queued, when no
// writer runs (writeHere).
type conn struct {
	b        *Broker
	nc       net.Conn
	listener string
	// ctx ends when the reader stops (cancel), which ends every wait of
	// the connection's requests.
	ctx    context.Context
	cancel context.CancelFunc
	// clientHost is the peer's address as Kafka shows it in group
	// descriptions: "/" and the IP.
	clientHost string
	// clientID is the client id of the last request, reused while the
	// next ones repeat it. Only the applier uses it.
	clientID *string
	// principal is who the connection authenticated as; auth.Anonymous
	// until TLS or SASL says otherwise. Only the applier reads or
	// changes it, so it needs no lock.
	principal auth.Principal
	// sasl is the authentication state of a SASL listener's connection;
	// nil on other listeners.
	sasl   *saslSession
	logger *slog.Logger
	// slots holds a token for each request read and not yet answered; its
	// length is the connection's in-flight count (idle when 0).
	slots chan struct{}
	// in carries frames from the reader to the applier, in arrival order.
	in chan []byte
	// applying is true while an applier goroutine runs. An applier runs
	// only while frames wait, and only one at a time; so does the writer
	// (writing) while answers wait in out, so that an idle connection
	// costs one parked goroutine, its reader. Both run on the broker's
	// workers (workers.go), which keep the stacks they grew, or on the
	// job before them (see conn).
	applying atomic.Bool
	appliers sync.WaitGroup
	out      chan *pending
	writing  atomic.Bool
	writers  sync.WaitGroup
	// writeFailed is set once a write failed or the connection was
	// closed after an answer; only the running writer uses it.
	writeFailed bool
	// closing is set when a request asks to close the connection after
	// the answers before it: the reader stops and nothing more is applied.
	closing atomic.Bool
	// idleTimeout is connections.max.idle.ms; 0: never idle.
	idleTimeout time.Duration
	// lastRead is when the reader last read a request (Unix nanoseconds),
	// for choosing the least recently used connection to evict.
	lastRead atomic.Int64
	// mutedUntil is when a quota throttle of this connection ends (Unix
	// nanoseconds); the applier applies nothing before (KIP-219). Set by
	// the applier, and by a waiting request once its answer is known.
	mutedUntil atomic.Int64
}

func (b *Broker) serveConn(ctx context.Context, nc net.Conn, listener string, principal auth.Principal) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &conn{
		b:           b,
		nc:          nc,
		listener:    listener,
		ctx:         ctx,
		cancel:      cancel,
		clientHost:  "/" + hostOf(nc.RemoteAddr()),
		principal:   principal,
		logger:      b.logger.With("remote", nc.RemoteAddr().String()),
		slots:       make(chan struct{}, maxInFlight),
		in:          make(chan []byte, maxInFlight),
		out:         make(chan *pending, maxInFlight),
		idleTimeout: max(b.cfg.ConnectionsMaxIdle, 0),
	}
	if b.principalOf != nil {
		c.principal = b.principalOf(nc)
	}
	c.sasl = b.newSASLSession(listener, &c.principal)
	c.lastRead.Store(time.Now().UnixNano())
	b.quotas.track(c)
	defer b.quotas.untrack(c)
	err := c.readLoop(ctx, cancel)
	// Whatever else ended the reading (the peer hung up, a bad frame, the
	// idle timeout, shutdown), no answer will be read: end every wait now,
	// so that the socket and what its requests hold are released at once.
	// A connection closing after a failed acks=0 produce answers the
	// requests before it first, as it did when they were sent.
	if !errors.Is(err, errClosing) {
		cancel()
	}
	c.appliers.Wait()
	c.discardQueued()
	c.writers.Wait() // the answers queued are written (or dropped)
	nc.Close()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, context.Canceled) && !errors.Is(err, errClosing) {
		c.logger.Debug("connection closed", "err", err)
	}
}

// readLoop reads frames and queues them for the applier until the
// connection ends, a frame is bad, the connection is idle too long, a
// request closes it, or ctx ends (shutdown, or a request the applier
// refused). Past maxInFlight requests of this connection, or
// queued.max.requests or queued.max.request.bytes over the broker, it stops
// reading until they drain.
func (c *conn) readLoop(ctx context.Context, cancel context.CancelFunc) error {
	stop := context.AfterFunc(ctx, func() { c.nc.SetReadDeadline(time.Now()) })
	defer stop()
	src := &frameSource{idle: idleReader{c: c, ctx: ctx}}
	var r *bufio.Reader
	defer func() {
		if r != nil {
			c.b.connBuffers.putReader(r)
		}
	}()
	for {
		if r == nil || r.Buffered() == 0 {
			// Nothing buffered: wait for the next frame without a buffer,
			// so that an idle connection holds none.
			if r != nil {
				c.b.connBuffers.putReader(r)
				r = nil
			}
			if err := src.awaitFrame(); err != nil {
				return err
			}
			r = c.b.connBuffers.reader(src)
		}
		// The frame's room in the queue is taken before its body is read,
		// so that queued.max.request.bytes bounds the memory of requests
		// waiting, as Kafka's memory pool does.
		prefix, err := r.Peek(4)
		if err != nil {
			return err
		}
		// A size out of bounds fails in ReadFrame; it takes no more room.
		size := min(max(int64(int32(binary.BigEndian.Uint32(prefix))), 0), int64(c.b.cfg.SocketRequestMaxBytes))
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := c.b.requests.enqueue(ctx, size); err != nil {
			<-c.slots
			return err
		}
		frame, err := c.readFrame(r, c.frameBuffer(r, prefixSize(prefix)))
		if err != nil {
			c.b.requests.dequeue(size)
			<-c.slots
			return err
		}
		now := time.Now().UnixNano()
		c.lastRead.Store(now)
		c.in <- frame
		if c.applying.CompareAndSwap(false, true) {
			c.appliers.Add(1)
			if c.applyHere(r, frame, now) {
				c.applyLoop(ctx, cancel, true)
				c.appliers.Done()
			} else {
				c.b.workers.start(workerJob{c: c})
			}
		}
	}
}

// applyHere reports whether the reader, which just read frame and took the
// applier's place, applies it itself (see conn): a Produce, not a raw SASL
// token that looks like one, the only frame queued (an applier that lost
// its place to the reader can leave older frames, of any kind), alone in
// the read buffer (a client pipelining requests keeps the reader reading
// while an applier applies), on a connection not muted (an applier waits
// the mute out, the reader would stop reading for it). Holding the
// applier's place, the reader alone queues frames and no one takes them,
// so the queue's length and the SASL phase are its own to read.
func (c *conn) applyHere(r *bufio.Reader, frame []byte, nowNanos int64) bool {
	if c.sasl != nil && c.sasl.phase == saslRawToken {
		return false
	}
	return frameKey(frame) == produceKey && len(c.in) == 1 && r.Buffered() == 0 && c.mutedUntil.Load() <= nowNanos
}

// applyLoop applies queued frames in order and ends when none is left.
// After a request that closes the connection, or once ctx has ended, it
// discards what is left instead of applying it. byReader is set when the
// reader runs it (applyHere).
func (c *conn) applyLoop(ctx context.Context, cancel context.CancelFunc, byReader bool) {
	for {
		frame, ok := nextQueued(c.in, &c.applying)
		if !ok {
			return
		}
		if byReader && c.mutedUntil.Load() > time.Now().UnixNano() {
			// A wait muted the connection (a fetch's throttle) since
			// applyHere looked: the reader must not wait the mute out,
			// it would stop reading. The frame goes back where it was
			// (the queue is empty: the reader alone queues, and it is
			// here) for a worker's applier, which keeps the place.
			c.in <- frame
			c.appliers.Add(1)
			c.b.workers.start(workerJob{c: c})
			return
		}
		c.b.requests.dequeue(int64(len(frame)))
		if ctx.Err() != nil || c.closing.Load() {
			<-c.slots
			continue
		}
		c.waitUnmuted(ctx)
		reusable := c.reusableFrame(frame)
		p, err := c.apply(ctx, frame)
		if reusable {
			c.b.frames.put(frame)
		}
		if err != nil {
			<-c.slots
			c.logger.Debug("closing connection", "err", err)
			cancel()
			continue
		}
		c.out <- p
		if c.writing.CompareAndSwap(false, true) {
			c.writers.Add(1)
			if c.writeHere(p) {
				c.writeLoop()
			} else {
				c.b.workers.start(workerJob{c: c, write: true})
			}
		}
		c.mute(p.reply.throttle)
		if p.reply.closeAfter {
			c.logger.Debug("closing after the answer", "principal", c.principal.String())
			c.closing.Store(true)
			c.nc.SetReadDeadline(time.Now())
		}
		if p.reply.closeConn {
			// The writer closes the connection once the earlier answers
			// are out; the reader stops now, and nothing after is applied.
			c.logger.Debug("closing after failed acks=0 produce")
			c.closing.Store(true)
			c.nc.SetReadDeadline(time.Now())
		}
	}
}

// writeHere reports whether the applier, which queued p and then won the
// writer's place, writes the answers itself: only when p is ready and is
// the only answer queued. An answer queued before p may still be there
// even so (the last writer found out empty, p's predecessor was queued
// while it still ran, and it lost the place to this applier), and it may
// wait: writing here would wait for it too, and the applier, perhaps the
// reader itself, would stop for the whole wait. Once the applier holds the
// writer's place, no one else takes from out and only it queues, so the
// length is exact.
func (c *conn) writeHere(p *pending) bool {
	return p.done == nil && len(c.out) == 1
}

// nextQueued takes the next item of q for a loop that runs only while
// items wait (running is true while it runs), or reports that q is empty
// and the loop has ended. An item queued between the empty check and
// running's clearing found the loop still running and started none: the
// loop takes it on, unless a new loop already has.
func nextQueued[T any](q chan T, running *atomic.Bool) (T, bool) {
	for {
		select {
		case v := <-q:
			return v, true
		default:
			running.Store(false)
			if len(q) == 0 || !running.CompareAndSwap(false, true) {
				var zero T
				return zero, false
			}
		}
	}
}

// discardQueued drops the frames no applier will take once the reader and
// appliers have stopped, giving back their queue places.
func (c *conn) discardQueued() {
	for {
		select {
		case frame := <-c.in:
			c.b.requests.dequeue(int64(len(frame)))
			<-c.slots
			c.b.frames.put(frame) // never applied: nothing refers to it
		default:
			return
		}
	}
}

// errClosing ends the reader of a connection that a request closes.
var errClosing = errors.New("broker: closing after failed acks=0 produce")

// idleReader reads from the connection, ending it with a timeout after
// connections.max.idle.ms without a byte read and without a request in
// flight, as Kafka closes idle connections.
type idleReader struct {
	c   *conn
	ctx context.Context
}

func (r idleReader) Read(p []byte) (int, error) {
	for {
		if r.c.idleTimeout > 0 {
			r.c.nc.SetReadDeadline(time.Now().Add(r.c.idleTimeout))
		}
		// Checked after setting the deadline: a shutdown or closing that
		// set its own deadline before is not undone unseen.
		if err := r.ctx.Err(); err != nil {
			return 0, err
		}
		if r.c.closing.Load() {
			return 0, errClosing
		}
		n, err := r.c.nc.Read(p)
		if n == 0 && isTimeout(err) && r.ctx.Err() == nil && len(r.c.slots) > 0 {
			continue // not idle: a request is still in flight
		}
		return n, err
	}
}

// isTimeout reports whether err is a deadline's timeout. Its own function
// so that the net.Error errors.As needs escapes only when asked, not on
// every Read.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

const (
	produceKey = 0
	fetchKey   = 1
)

// frameBuffer is the buffer to read a frame of size bytes into: a pooled
// one for a Produce or Fetch, which goes back to the pool once applied; nil
// (a buffer of the frame's own size) for other requests, which may keep
// their frame. The key is peeked after the size prefix; a frame of fewer
// than 8 bytes (too short for a request, or a raw SASL token) or over the
// limit is not waited on: readFrame rejects or reads it at once.
func (c *conn) frameBuffer(r *bufio.Reader, size int64) []byte {
	if size < protocol.MinFrameSize || size > int64(c.frameLimit()) {
		return nil
	}
	head, err := r.Peek(6)
	if err != nil {
		return nil // readFrame meets the same error
	}
	if key := int16(binary.BigEndian.Uint16(head[4:])); key != produceKey && key != fetchKey {
		return nil
	}
	return c.b.frames.get(int(size))
}

// reusableFrame reports whether frame goes back to the frame pool once
// applied. kmsg's decoded requests point into the frame. Produce and Fetch
// handlers keep nothing of it once they return (records are written to the
// log during the call, strings are copies, and an acks=all or long-poll
// wait holds only what the handler built), so their frame is reused; other
// requests may keep bytes (group metadata, SASL tokens), so their frame is
// left to them. Asked before the apply, which may change the SASL phase.
func (c *conn) reusableFrame(frame []byte) bool {
	if c.sasl != nil && c.sasl.phase == saslRawToken {
		return false
	}
	key := frameKey(frame)
	return key == produceKey || key == fetchKey
}

// prefixSize is the size a frame's 4-byte prefix announces.
func prefixSize(prefix []byte) int64 { return int64(int32(binary.BigEndian.Uint32(prefix))) }

func frameKey(frame []byte) int16 {
	if len(frame) < 2 {
		return -1 // a raw SASL token
	}
	return int16(binary.BigEndian.Uint16(frame))
}

// apply decodes one frame and runs its handler. A nil pending with a nil
// error never happens; an error closes the connection, as Kafka does for
// unknown keys, unsupported versions and bodies that do not decode.
func (c *conn) apply(ctx context.Context, frame []byte) (*pending, error) {
	if c.sasl != nil && c.sasl.phase == saslRawToken {
		return c.applyRawToken(frame)
	}
	hdr, body, err := protocol.ParseRequestHeaderReusing(frame, c.clientID)
	if err != nil {
		return nil, err
	}
	c.clientID = hdr.ClientID
	// Kafka's authenticator answers these itself, outside the request
	// quota.
	preAuth := c.sasl != nil && c.sasl.phase != saslComplete
	if c.sasl != nil {
		h, known := c.b.handlers[hdr.Key]
		if err := c.sasl.admit(hdr.Key, known && hdr.Version <= h.max); err != nil {
			return nil, err
		}
	}
	c.logRequest(ctx, hdr)
	h, ok := c.b.handlers[hdr.Key]
	if !ok {
		return nil, fmt.Errorf("unsupported api key %d", hdr.Key)
	}
	if hdr.Version < h.min || hdr.Version > h.max {
		if hdr.Key == protocol.ApiVersionsKey && hdr.Version > h.max {
			return &pending{correlationID: hdr.CorrelationID, reply: reply{resp: c.b.unsupportedApiVersions()}, slot: metrics.NoSlot}, nil
		}
		return nil, fmt.Errorf("unsupported version %d of %s", hdr.Version, kmsg.NameForKey(hdr.Key))
	}
	req := kmsg.RequestForKey(hdr.Key)
	req.SetVersion(hdr.Version)
	protocol.StopReplicaFromKafka(hdr.Key, hdr.Version, body) // kmsg's field order differs
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decode %s v%d: %w", kmsg.NameForKey(hdr.Key), hdr.Version, err)
	}
	start := time.Now()
	fromFollower := false
	if fetch, ok := req.(*kmsg.FetchRequest); ok {
		fromFollower = fetchReplicaID(fetch) >= 0
	}
	slot := c.b.metrics.Requests.Received(hdr.Key, hdr.Version, fromFollower)
	// The request lives in its pending answer: one allocation for both.
	p := &pending{correlationID: hdr.CorrelationID, slot: slot, start: start}
	r := &p.req
	*r = request{correlationID: hdr.CorrelationID, listener: c.listener, clientHost: c.clientHost, principal: c.principal, sasl: c.sasl, start: start}
	if hdr.ClientID != nil {
		r.clientID = *hdr.ClientID
	}
	r.quotaExempt = preAuth || c.b.requestQuota.Enabled() && clusterActionExempt(hdr.Key, fromFollower) && c.b.authorizeCluster(r, auth.OpClusterAction)
	rep, err := c.runHandler(ctx, h.fn, hdr, r, req)
	if err != nil {
		return nil, err
	}
	if !rep.ownQuota {
		rep.throttle = max(rep.throttle, c.b.recordRequestTime(r, time.Since(start)))
	}
	if rep.resp != nil {
		raiseThrottle(rep.resp, rep.throttle)
	}
	p.reply = rep
	if rep.wait != nil {
		p.done = make(chan struct{})
		p.key = hdr.Key
		c.b.workers.start(workerJob{c: c, wait: p})
	}
	return p, nil
}

// awaitReply runs the wait of a request whose answer waits (a long poll,
// acks=all) and completes p with the answer, off the applier.
func (c *conn) awaitReply(p *pending) {
	defer close(p.done)
	defer func() {
		if v := recover(); v != nil {
			c.logger.Error("handler panic while waiting", "api", kmsg.NameForKey(p.key), "panic", v, "stack", string(debug.Stack()))
			p.reply.resp, p.waitPanicked = nil, true
		}
	}()
	// wait, throttle and waitRegions are not written after apply.
	rep := &p.reply
	resp := rep.wait()
	raiseThrottle(resp, rep.throttle)
	// A throttle known only now (a fetch's) mutes from now; one
	// known before, the applier has muted for already.
	if d := throttleOf(resp); d > rep.throttle {
		c.mute(d)
	}
	p.reply.resp = resp
	if rep.waitRegions != nil {
		p.reply.fetchRegions = *rep.waitRegions
	}
}

// runHandler runs a handler; a bug in one handler must cost one
// connection, not the broker. (Apart from apply, so that apply's results
// need not live on the heap for the recover to set them.)
func (c *conn) runHandler(ctx context.Context, fn handlerFunc, hdr protocol.RequestHeader, r *request, req kmsg.Request) (rep reply, err error) {
	defer func() {
		if v := recover(); v != nil {
			c.logger.Error("handler panic", "api", kmsg.NameForKey(hdr.Key), "version", hdr.Version, "panic", v, "stack", string(debug.Stack()))
			rep, err = reply{}, fmt.Errorf("handler panic: %v", v)
		}
	}()
	rep, err = fn(ctx, r, req)
	if err != nil {
		return reply{}, fmt.Errorf("%s v%d: %w", kmsg.NameForKey(hdr.Key), hdr.Version, err)
	}
	return rep, nil
}

// writeLoop writes queued responses in request order and ends when none
// is left, giving back its buffer. After a write error it keeps draining so
// that the applier and waiting handlers never block on it.
func (c *conn) writeLoop() {
	defer c.writers.Done()
	bp := c.b.connBuffers.writeBuffer()
	buf := *bp
	defer func() { c.b.connBuffers.putWriteBuffer(bp, buf) }()
	for {
		p, ok := nextQueued(c.out, &c.writing)
		if !ok {
			return
		}
		if p.done != nil {
			<-p.done
		}
		buf, c.writeFailed = c.writeResponse(p, buf, c.writeFailed)
		if p.slot != metrics.NoSlot {
			c.b.metrics.Requests.Completed(p.slot, time.Since(p.start))
		}
		<-c.slots // answered: no longer in flight
	}
}

// writeResponse writes one response unless the connection has failed or
// the reply asks for none; it returns the buffer to reuse and whether the
// connection has failed.
func (c *conn) writeResponse(p *pending, buf []byte, failed bool) ([]byte, bool) {
	if (p.reply.closeConn || p.waitPanicked) && !failed {
		c.nc.Close()
		failed = true
	}
	if p.reply.raw && !failed {
		return c.writeRawToken(p.reply.token, buf)
	}
	if p.reply.none || p.reply.resp == nil || failed {
		return buf, failed
	}
	// A peer that stops reading fills the socket and would park the
	// writer for good: a response not written within
	// connections.max.idle.ms ends the connection, as if it were idle.
	if c.idleTimeout > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(c.idleTimeout))
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
	if p.reply.closeAfter && !failed {
		c.nc.Close()
		failed = true
	}
	if cap(buf) > maxPooledResponse {
		buf = nil // do not pin a large response's buffer while the next answer waits
	}
	return buf, failed
}

func hostOf(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	return a.String()
}
