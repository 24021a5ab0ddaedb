package broker

import "sync"

// bufferPool recycles fetch buffers. Buffers above maxPooledBuffer are left
// to the garbage collector so that one huge fetch does not stay resident.
type bufferPool struct {
	p sync.Pool
}

const maxPooledBuffer = 4 << 20

func (bp *bufferPool) get(n int) []byte {
	if v, ok := bp.p.Get().(*[]byte); ok && cap(*v) >= n {
		return (*v)[:n]
	}
	return make([]byte, n, max(n, 64<<10))
}

func (bp *bufferPool) put(b []byte) {
	if cap(b) > maxPooledBuffer {
		return
	}
	b = b[:0]
	bp.p.Put(&b)
}
