package broker

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Request frame buffers are pooled broker-wide by size class, so that a
// connection's pipelined Produce and Fetch requests read into reused
// memory. A buffer per connection does not do it: with several requests in
// flight the reader is always a few frames ahead of the applier, and every
// frame it reads while the one buffer is still being applied is a new
// allocation (all of a producer's bytes again, and the GC work after).
// A pool also keeps nothing for an idle connection: sync.Pool drops what
// two GC cycles did not use.
const (
	// minPooledFrame is the smallest class; smaller frames (most
	// requests besides Produce) round up to it.
	minPooledFrame = 4 << 10
	// maxPooledFrame is the largest class; a larger frame is read into a
	// buffer of its own, grown as its bytes arrive.
	maxPooledFrame = 1 << 20
	frameClasses   = 9 // 4 KiB, 8 KiB, ... 1 MiB
)

// framePool holds request frame buffers of frameClasses sizes. A pooled
// buffer is kept as a pointer to its first byte (its capacity is its
// class), so putting one back allocates nothing.
type framePool struct {
	classes [frameClasses]sync.Pool
	// made counts the buffers the pool had to allocate.
	made atomic.Int64
}

// frameClass is the class of a frame of size bytes, or -1 when it is
// larger than maxPooledFrame.
func frameClass(size int) int {
	if size > maxPooledFrame {
		return -1
	}
	if size <= minPooledFrame {
		return 0
	}
	return bits.Len(uint(size-1)) - bits.Len(uint(minPooledFrame-1))
}

// get returns an empty buffer with room for size bytes, or nil when size
// is beyond the pooled classes.
func (p *framePool) get(size int) []byte {
	c := frameClass(size)
	if c < 0 {
		return nil
	}
	n := minPooledFrame << c
	if ptr, ok := p.classes[c].Get().(*byte); ok {
		return unsafe.Slice(ptr, n)[:0]
	}
	p.made.Add(1)
	return make([]byte, 0, n)
}

// put gives buf back once nothing refers to its bytes any more. Buffers
// the pool did not make (their capacity is no class's size) are left to
// the GC.
func (p *framePool) put(buf []byte) {
	c := frameClass(cap(buf))
	if c < 0 || cap(buf) != minPooledFrame<<c {
		return
	}
	p.classes[c].Put(unsafe.SliceData(buf[:1]))
}
