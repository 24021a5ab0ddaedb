package batch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/s2"
)

// Kafka's snappy comes in two shapes. The Java producer (snappy-java's
// SnappyOutputStream) writes the xerial framing:
//
//	offset  size  field
//	0       8     magic 0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
//	8       4     version (1)
//	12      4     compatible version (1)
//	16      ...   chunks: 4-byte big-endian length, then one raw snappy block
//
// librdkafka, when it builds a batch itself, writes one raw snappy block
// with no framing. snappyReader accepts both and decodes one block at a
// time, so memory stays bounded by a block (the Java producer cuts 32 KiB
// blocks) instead of by the whole payload.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderLen = 16

// maxSnappyExpansion bounds how many times its own size a snappy block
// decodes to. Snappy's densest element is a copy of 64 bytes in 3, so no
// snappy encoder (snappy-java, librdkafka's, franz-go's s2.EncodeSnappy)
// writes a block that decodes to more than 64/3 its size. The decoded size
// is allocated from the block's header before decoding, so a header
// claiming more than that is refused before allocating: a 70-byte batch
// would otherwise cost up to the decompression limit (256 MiB by default)
// per request. With it, a batch allocates at most 22 times its size,
// itself at most max.message.bytes. (s2.Decode also takes S2's repeat
// extension, which can encode more; snappy-java, Kafka's decoder, refuses
// those blocks anyway.)
const maxSnappyExpansion = 22

type snappyReader struct {
	src  []byte // undecoded input
	raw  bool   // src is a single raw block
	out  []byte // decoded, not yet read
	buf  []byte // reused block buffer
	err  error
	done bool
	// maxBlock bounds one block's decoded size, which its header states
	// before any work is done; a lying header must not allocate.
	maxBlock int64
}

// reset starts reading src, keeping the block buffer.
func (r *snappyReader) reset(src []byte, maxBlock int64) {
	*r = snappyReader{src: src, raw: true, buf: r.buf, maxBlock: maxBlock}
	if len(src) >= len(xerialMagic) && bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		r.raw = false
		r.src = src[min(len(src), xerialHeaderLen):]
		if len(src) < xerialHeaderLen {
			r.err = fmt.Errorf("%w: xerial header of %d bytes", errSnappy, len(src))
		}
	}
}

func (r *snappyReader) Read(p []byte) (int, error) {
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.err = r.nextBlock()
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// nextBlock decodes the next block into r.out, or returns io.EOF.
func (r *snappyReader) nextBlock() error {
	var block []byte
	switch {
	case r.raw && !r.done:
		block, r.done = r.src, true
	case r.raw, len(r.src) == 0:
		return io.EOF
	default:
		if len(r.src) < 4 {
			return fmt.Errorf("%w: %d trailing bytes after the last chunk", errSnappy, len(r.src))
		}
		n := binary.BigEndian.Uint32(r.src)
		if uint64(n) > uint64(len(r.src)-4) {
			return fmt.Errorf("%w: chunk of %d bytes, %d left", errSnappy, n, len(r.src)-4)
		}
		block, r.src = r.src[4:4+n], r.src[4+n:]
	}
	n, err := s2.DecodedLen(block)
	if err != nil {
		return fmt.Errorf("%w: %w", errSnappy, err)
	}
	if int64(n) > r.maxBlock {
		return fmt.Errorf("%w: snappy block decodes to %d bytes, more than %d", ErrMessageTooLarge, n, r.maxBlock)
	}
	if int64(n) > maxSnappyExpansion*int64(len(block)) {
		return fmt.Errorf("%w: block of %d bytes claims to decode to %d, more than snappy can encode in it", errSnappy, len(block), n)
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	out, err := s2.Decode(r.buf[:n], block)
	if err != nil {
		return fmt.Errorf("%w: %w", errSnappy, err)
	}
	r.out = out
	return nil
}
