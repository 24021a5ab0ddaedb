package broker

import (
	"bufio"
	"sync"
)

// An idle connection holds no read or write buffer: a broker with 10,000
// client connections that send a request now and then would otherwise keep
// 16 KiB of read buffer (and its last response's buffer) for each of them
// while they wait. The reader takes a buffered reader from the broker's
// pool only once the next request's first bytes have arrived, and gives it
// back when everything it buffered has been read; the writer runs, with a
// pooled response buffer, only while responses are queued. sync.Pool drops
// what two GC cycles did not use, so the pools shrink after a burst too.

// readBufferSize is the size of a connection's read buffer while it reads.
const readBufferSize = 16 << 10

// connBuffers are the read and write buffers that connections borrow while
// they have something to read or write.
type connBuffers struct {
	readers sync.Pool // *bufio.Reader of readBufferSize
	writes  sync.Pool // *[]byte, at most maxPooledResponse of capacity
}

// maxPooledResponse is the largest response buffer kept for reuse; a
// larger one is left to the GC, so that one big answer does not pin its
// memory in the pool.
const maxPooledResponse = 1 << 20

// reader is a pooled buffered reader reading from src.
func (p *connBuffers) reader(src *frameSource) *bufio.Reader {
	r, _ := p.readers.Get().(*bufio.Reader)
	if r == nil {
		return bufio.NewReaderSize(src, readBufferSize)
	}
	r.Reset(src)
	return r
}

// putReader gives back a reader with nothing buffered.
func (p *connBuffers) putReader(r *bufio.Reader) {
	r.Reset(nil) // the pool must not keep the connection alive
	p.readers.Put(r)
}

// writeBuffer is a pooled response buffer, empty.
func (p *connBuffers) writeBuffer() *[]byte {
	if bp, _ := p.writes.Get().(*[]byte); bp != nil {
		return bp
	}
	return new([]byte)
}

// putWriteBuffer gives back the response buffer buf, held in bp; the
// writer has dropped it already if it was over maxPooledResponse.
func (p *connBuffers) putWriteBuffer(bp *[]byte, buf []byte) {
	*bp = buf[:0]
	p.writes.Put(bp)
}

// frameSource is what a connection's buffered reader reads from: the few
// bytes the reader read while idle (without a buffer), then the connection.
type frameSource struct {
	idle idleReader
	// head holds the bytes read while idle; head[off:n] are not yet
	// handed to the buffered reader. 512 bytes, not the 4 of a size
	// prefix: a small request (a heartbeat, a fetch in a session, a
	// metadata request) then arrives in the one read that ends the wait,
	// where a prefix alone took a second read (and read deadline) per
	// request of a client with one request in flight.
	head   [512]byte
	off, n int
}

// awaitFrame blocks, holding no buffer, until the next frame's first bytes
// arrive (or the connection ends, as idleReader decides).
func (s *frameSource) awaitFrame() error {
	for {
		n, err := s.idle.Read(s.head[:])
		if n > 0 {
			// An error with bytes comes back on the next Read.
			s.off, s.n = 0, n
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (s *frameSource) Read(p []byte) (int, error) {
	if s.off < s.n {
		k := copy(p, s.head[s.off:s.n])
		s.off += k
		return k, nil
	}
	return s.idle.Read(p)
}
