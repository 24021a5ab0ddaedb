package batch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy/xerial"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// String names the codec as Kafka's compression.type does.
func (c Compression) String() string {
	switch c {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Snappy:
		return "snappy"
	case LZ4:
		return "lz4"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", int8(c))
}

// Valid reports whether c is a codec Kafka defines.
func (c Compression) Valid() bool { return c >= None && c <= Zstd }

// Default compression levels, as Kafka's compression.{gzip,lz4,zstd}.level
// defaults (KIP-390): gzip -1 means zlib's default, 6.
const (
	DefaultGzipLevel = 6
	DefaultLZ4Level  = 9
	DefaultZstdLevel = 3
)

// DefaultMaxUncompressedBytes bounds how far one batch's records may
// decompress when the caller sets no bound: a zip bomb then costs at most
// this much work and never this much memory (records are streamed).
const DefaultMaxUncompressedBytes = 256 << 20

// zstdMaxWindow bounds the zstd window a frame may demand. Kafka's Java
// decoder allows 2^27; producers at ordinary levels use at most 8 MiB.
const zstdMaxWindow = 1 << 27

// CodecsConfig sets the levels Compress uses; zero fields take Kafka's
// defaults.
type CodecsConfig struct {
	GzipLevel int // 1..9
	LZ4Level  int // 0 (fast) or 1..9 (high compression)
	ZstdLevel int // 1..22, mapped onto the Go encoder's four speeds
}

// Codecs compresses and decompresses record payloads. It pools encoders and
// decoders (a zstd decoder costs hundreds of KiB to set up), is safe for
// concurrent use, and is meant to be made once per broker and passed around.
type Codecs struct {
	gzipLevel int
	lz4Level  lz4.CompressionLevel

	zstdLevel   zstd.EncoderLevel
	zstdEncOnce sync.Once
	zstdEnc     *zstd.Encoder // EncodeAll is safe for concurrent use
	zstdEncErr  error

	gzipReaders   sync.Pool // *gzip.Reader
	gzipWriters   sync.Pool // *gzip.Writer
	lz4Readers    sync.Pool // *lz4.Reader
	lz4Writers    sync.Pool // *lz4.Writer
	zstdReaders   sync.Pool // *zstd.Decoder, streaming, concurrency 1
	snappyReaders sync.Pool // *snappyReader, keeping its block buffer
	bufReaders    sync.Pool // *bufio.Reader
}

// NewCodecs returns codecs with the given levels.
func NewCodecs(cfg CodecsConfig) (*Codecs, error) {
	if cfg.GzipLevel == 0 {
		cfg.GzipLevel = DefaultGzipLevel
	}
	if cfg.ZstdLevel == 0 {
		cfg.ZstdLevel = DefaultZstdLevel
	}
	if cfg.GzipLevel < gzip.BestSpeed || cfg.GzipLevel > gzip.BestCompression {
		return nil, fmt.Errorf("batch: gzip level %d outside 1..9", cfg.GzipLevel)
	}
	if cfg.LZ4Level < 0 || cfg.LZ4Level > 9 {
		return nil, fmt.Errorf("batch: lz4 level %d outside 0..9", cfg.LZ4Level)
	}
	if cfg.ZstdLevel < 1 || cfg.ZstdLevel > 22 {
		return nil, fmt.Errorf("batch: zstd level %d outside 1..22", cfg.ZstdLevel)
	}
	c := &Codecs{gzipLevel: cfg.GzipLevel, lz4Level: lz4.Fast}
	if cfg.LZ4Level > 0 {
		c.lz4Level = lz4.CompressionLevel(1 << (8 + cfg.LZ4Level))
	}
	c.zstdLevel = zstd.EncoderLevelFromZstd(cfg.ZstdLevel)
	return c, nil
}

// MustCodecs is NewCodecs with Kafka's default levels, which cannot fail.
func MustCodecs() *Codecs {
	c, err := NewCodecs(CodecsConfig{})
	if err != nil {
		panic(err)
	}
	return c
}

// Compress appends src compressed with codec to dst. Snappy is written in
// the xerial framing, as the Java producer does; lz4 as one frame with 64 KiB
// independent blocks, as Kafka's KafkaLZ4BlockOutputStream does.
func (c *Codecs) Compress(dst, src []byte, codec Compression) ([]byte, error) {
	switch codec {
	case None:
		return append(dst, src...), nil
	case Gzip:
		w, _ := c.gzipWriters.Get().(*gzip.Writer)
		buf := bytes.NewBuffer(dst)
		if w == nil {
			var err error
			if w, err = gzip.NewWriterLevel(buf, c.gzipLevel); err != nil {
				return dst, fmt.Errorf("batch: gzip writer: %w", err)
			}
		} else {
			w.Reset(buf)
		}
		defer c.gzipWriters.Put(w)
		if _, err := w.Write(src); err != nil {
			return dst, fmt.Errorf("batch: gzip: %w", err)
		}
		if err := w.Close(); err != nil {
			return dst, fmt.Errorf("batch: gzip: %w", err)
		}
		return buf.Bytes(), nil
	case Snappy:
		// xerial.Encode needs an empty dst: it writes the framing header
		// only then.
		out := xerial.Encode(nil, src)
		if len(src) == 0 {
			// A header alone reads as a bad raw block to decoders that
			// sniff for the framing (franz-go's does): add one empty chunk.
			out = append(out, 0, 0, 0, 1, 0)
		}
		return append(dst, out...), nil
	case LZ4:
		w, _ := c.lz4Writers.Get().(*lz4.Writer)
		buf := bytes.NewBuffer(dst)
		if w == nil {
			w = lz4.NewWriter(buf)
			if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false),
				lz4.ConcurrencyOption(1), lz4.CompressionLevelOption(c.lz4Level)); err != nil {
				return dst, fmt.Errorf("batch: lz4 writer: %w", err)
			}
		} else {
			w.Reset(buf)
		}
		defer c.lz4Writers.Put(w)
		if _, err := w.Write(src); err != nil {
			return dst, fmt.Errorf("batch: lz4: %w", err)
		}
		if err := w.Close(); err != nil {
			return dst, fmt.Errorf("batch: lz4: %w", err)
		}
		return buf.Bytes(), nil
	case Zstd:
		// Made on first use: a Codecs that never writes zstd (or a
		// throwaway one) should not pay for an encoder.
		c.zstdEncOnce.Do(func() {
			c.zstdEnc, c.zstdEncErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(c.zstdLevel), zstd.WithEncoderCRC(true))
		})
		if c.zstdEncErr != nil {
			return dst, fmt.Errorf("batch: zstd encoder: %w", c.zstdEncErr)
		}
		return c.zstdEnc.EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("%w: %s", ErrUnsupportedCompression, codec)
}

// NewReader returns a reader of the decompressed form of src. Close returns
// pooled decoders; the reader must not be used after it.
func (c *Codecs) NewReader(src []byte, codec Compression) (io.ReadCloser, error) {
	return c.newReader(src, codec, DefaultMaxUncompressedBytes)
}

// newReader is NewReader with the bound that the caller will enforce on the
// stream, so that snappy can refuse a block header announcing more.
func (c *Codecs) newReader(src []byte, codec Compression, limit int64) (io.ReadCloser, error) {
	switch codec {
	case None:
		return io.NopCloser(bytes.NewReader(src)), nil
	case Gzip:
		r, _ := c.gzipReaders.Get().(*gzip.Reader)
		if r == nil {
			r = new(gzip.Reader)
		}
		if err := r.Reset(bytes.NewReader(src)); err != nil {
			c.gzipReaders.Put(r)
			return nil, fmt.Errorf("batch: gzip header: %w", err)
		}
		return &pooledReader{Reader: r, put: func() { c.gzipReaders.Put(r) }}, nil
	case Snappy:
		r, _ := c.snappyReaders.Get().(*snappyReader)
		if r == nil {
			r = new(snappyReader)
		}
		r.reset(src, limit)
		return &pooledReader{Reader: r, put: func() { c.putSnappy(r) }}, nil
	case LZ4:
		r, _ := c.lz4Readers.Get().(*lz4.Reader)
		if r == nil {
			r = lz4.NewReader(nil)
		}
		r.Reset(bytes.NewReader(src))
		return &pooledReader{Reader: r, put: func() { c.lz4Readers.Put(r) }}, nil
	case Zstd:
		d, _ := c.zstdReaders.Get().(*zstd.Decoder)
		if d == nil {
			var err error
			d, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderMaxMemory(zstdMaxWindow))
			if err != nil {
				return nil, fmt.Errorf("batch: zstd decoder: %w", err)
			}
		}
		// A bytes.Reader, unlike a bytes.Buffer, keeps the decoder in
		// streaming mode instead of decoding everything up front.
		if err := d.Reset(bytes.NewReader(src)); err != nil {
			c.zstdReaders.Put(d)
			return nil, fmt.Errorf("batch: zstd: %w", err)
		}
		return &pooledReader{Reader: d, put: func() {
			_ = d.Reset(nil) // drops the reference to src
			c.zstdReaders.Put(d)
		}}, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupportedCompression, codec)
}

// Decompress appends the decompressed form of src to dst, failing with
// ErrMessageTooLarge once it would pass limit bytes (limit <= 0:
// DefaultMaxUncompressedBytes).
func (c *Codecs) Decompress(dst, src []byte, codec Compression, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxUncompressedBytes
	}
	r, err := c.newReader(src, codec, limit)
	if err != nil {
		return dst, err
	}
	defer r.Close()
	buf := bytes.NewBuffer(dst)
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return dst, fmt.Errorf("batch: decompress %s: %w", codec, err)
	}
	if n > limit {
		return dst, fmt.Errorf("%w: %s payload decompresses to more than %d bytes", ErrMessageTooLarge, codec, limit)
	}
	return buf.Bytes(), nil
}

// snappyBlock decodes src whole when it is one raw snappy block, no
// xerial framing (what franz-go and librdkafka send), decoding to at most
// limit bytes: the stream would decode the same block whole into the same
// buffer. Give r back with putSnappy once out is no longer used. ok is
// false for anything else, a block that does not decode or decodes to
// more than maxPooledSnappyBlock included.
func (c *Codecs) snappyBlock(src []byte, limit int64) (out []byte, r *snappyReader, ok bool) {
	// A block larger than the pool keeps (or whose header does not parse)
	// is left to the stream, which decodes it once: decoded here first, a
	// fault found would make the stream allocate its size a second time.
	if bytes.HasPrefix(src, xerialMagic) { // the Java producer's framing: the stream's
		return nil, nil, false
	}
	if n, err := s2.DecodedLen(src); err != nil || n > maxPooledSnappyBlock {
		return nil, nil, false
	}
	r, _ = c.snappyReaders.Get().(*snappyReader)
	if r == nil {
		r = new(snappyReader)
	}
	r.reset(src, limit)
	if !r.raw || r.nextBlock() != nil {
		c.putSnappy(r)
		return nil, nil, false
	}
	return r.out, r, true
}

// maxPooledSnappyBlock is the largest decoded block buffer kept pooled.
const maxPooledSnappyBlock = 1 << 20

func (c *Codecs) putSnappy(r *snappyReader) {
	r.reset(nil, 0)
	if cap(r.buf) > maxPooledSnappyBlock {
		r.buf = nil // a raw block can be huge; do not pool that
	}
	c.snappyReaders.Put(r)
}

// bufReader wraps r in a pooled bufio.Reader; put it back with putBufReader.
func (c *Codecs) bufReader(r io.Reader) *bufio.Reader {
	br, _ := c.bufReaders.Get().(*bufio.Reader)
	if br == nil {
		return bufio.NewReaderSize(r, 32<<10)
	}
	br.Reset(r)
	return br
}

func (c *Codecs) putBufReader(br *bufio.Reader) {
	br.Reset(nil)
	c.bufReaders.Put(br)
}

type pooledReader struct {
	io.Reader
	put func()
}

func (p *pooledReader) Close() error {
	if p.put != nil {
		p.put()
		p.put = nil
		p.Reader = eofReader{}
	}
	return nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// errSnappy is wrapped for malformed snappy input.
var errSnappy = errors.New("malformed snappy data")
