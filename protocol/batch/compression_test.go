package batch

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func payloads() map[string][]byte {
	rng := rand.New(rand.NewPCG(7, 8))
	random := make([]byte, 100<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	return map[string][]byte{
		"empty":      {},
		"one byte":   {42},
		"random":     random,
		"repetitive": bytes.Repeat([]byte("kafka record value "), 60000), // > 1 MiB, many blocks
	}
}

func TestCodecRoundTrip(t *testing.T) {
	codecs := mustCodecs(t)
	for name, p := range payloads() {
		for _, codec := range allCodecs {
			t.Run(codec.String()+"/"+name, func(t *testing.T) {
				prefix := []byte("prefix")
				c, err := codecs.Compress(bytes.Clone(prefix), p, codec)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(c, prefix) {
					t.Fatal("Compress did not append to dst")
				}
				d, err := codecs.Decompress(nil, c[len(prefix):], codec, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(d, p) {
					t.Fatalf("round trip: %d bytes, want %d", len(d), len(p))
				}
			})
		}
	}
}

func TestCodecsConfig(t *testing.T) {
	bad := []CodecsConfig{{GzipLevel: 10}, {GzipLevel: -2}, {LZ4Level: 10}, {LZ4Level: -1}, {ZstdLevel: 23}, {ZstdLevel: -1}}
	for _, cfg := range bad {
		if _, err := NewCodecs(cfg); err == nil {
			t.Errorf("NewCodecs(%+v) accepted", cfg)
		}
	}
	p := payloads()["repetitive"]
	for _, cfg := range []CodecsConfig{{GzipLevel: 1, LZ4Level: 0, ZstdLevel: 1}, {GzipLevel: 9, LZ4Level: 1, ZstdLevel: 19}} {
		c, err := NewCodecs(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, codec := range allCodecs {
			out, err := c.Compress(nil, p, codec)
			if err != nil {
				t.Fatal(err)
			}
			if d, err := c.Decompress(nil, out, codec, 0); err != nil || !bytes.Equal(d, p) {
				t.Fatalf("%+v %s: round trip failed: %v", cfg, codec, err)
			}
		}
	}
}

func TestDecompressLimit(t *testing.T) {
	codecs := mustCodecs(t)
	p := make([]byte, 1<<20)
	for _, codec := range allCodecs {
		t.Run(codec.String(), func(t *testing.T) {
			c, err := codecs.Compress(nil, p, codec)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := codecs.Decompress(nil, c, codec, 1<<20); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			_, err = codecs.Decompress(nil, c, codec, 1<<20-1)
			wantCode(t, err, codeTooLarge, ErrMessageTooLarge)
		})
	}
	// A raw snappy block announcing 4 GiB must fail before allocating.
	lie := binary.AppendUvarint(nil, 1<<32-1)
	_, err := codecs.Decompress(nil, append(lie, 0, 'x'), Snappy, 1<<20)
	wantCode(t, err, codeTooLarge, ErrMessageTooLarge)
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoldenDecode decodes vectors made by other implementations (the C
// zstd and lz4 tools, Python's zlib) or by hand from the format specs.
func TestGoldenDecode(t *testing.T) {
	codecs := mustCodecs(t)
	xerialHeader := "82534e41505059000000000100000001"
	tests := []struct {
		name  string
		codec Compression
		in    string
		want  string
	}{
		{"gzip, python", Gzip, "1f8b0800000000000203cb48cdc9c957c84e4ccb4e0400d175816c0b000000", "hello kafka"},
		{"gzip, two members", Gzip, "1f8b08000000000002034b4c4a0600c2412435030000001f8b08000000000002034b494d030061e1c40c03000000", "abcdef"},
		// snappy block: varint length 5, literal tag (5-1)<<2, "hello".
		{"snappy raw block (librdkafka)", Snappy, "051068656c6c6f", "hello"},
		// literal "abc", then copy-1 (tag 0x09: length 6, offset 3).
		{"snappy raw block with copy", Snappy, "0908616263" + "0903", "abcabcabc"},
		{"snappy xerial (java)", Snappy, xerialHeader + "00000007" + "051068656c6c6f", "hello"},
		{"snappy xerial, two chunks", Snappy, xerialHeader + "00000007" + "051068656c6c6f" + "00000005" + "0308616263", "helloabc"},
		{"snappy xerial, no chunks", Snappy, xerialHeader, ""},
		{"lz4 cli, content checksum", LZ4, "04224d186440a715000000ce68656c6c6f206b61666b61200c00506b61666b610000000061c4f6df", "hello kafka hello kafka hello kafka"},
		{"lz4 cli, kafka framing (64k, no checksum)", LZ4, "04224d1860408215000000ce68656c6c6f206b61666b61200c00506b61666b6100000000", "hello kafka hello kafka hello kafka"},
		{"lz4 cli, block checksums", LZ4, "04224d187440bd15000000ce68656c6c6f206b61666b61200c00506b61666b6104072fb20000000061c4f6df", "hello kafka hello kafka hello kafka"},
		// header 04224d18 604082, one uncompressed block (size|0x80000000), end mark.
		{"lz4 stored block", LZ4, "04224d18604082" + "05000080" + "68656c6c6f" + "00000000", "hello"},
		{"zstd cli", Zstd, "28b52ffd04589500006068656c6c6f206b61666b61200100af4b12c32e1c62", "hello kafka hello kafka hello kafka"},
		// single-segment frame, content size 5, last raw block of 5 bytes.
		{"zstd raw block", Zstd, "28b52ffd2005" + "290000" + "68656c6c6f", "hello"},
		// last RLE block regenerating 10 bytes of 'a'.
		{"zstd rle block", Zstd, "28b52ffd200a" + "530000" + "61", "aaaaaaaaaa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := codecs.Decompress(nil, mustHex(t, tt.in), tt.codec, 0)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestGoldenEncodeFraming checks by hand the framing our encoders write,
// which the Java consumer relies on.
func TestGoldenEncodeFraming(t *testing.T) {
	codecs := mustCodecs(t)
	src := bytes.Repeat([]byte("x"), 70<<10) // more than one 32 KiB xerial chunk and 64 KiB lz4 block
	sn, err := codecs.Compress(nil, src, Snappy)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(sn[:16]); got != "82534e41505059000000000100000001" {
		t.Fatalf("xerial header %s", got)
	}
	chunks := 0
	for rest := sn[16:]; len(rest) > 0; chunks++ {
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4+n:]
	}
	if chunks != 3 {
		t.Fatalf("%d xerial chunks for 70 KiB, want 3 of at most 32 KiB", chunks)
	}
	l4, err := codecs.Compress(nil, src, LZ4)
	if err != nil {
		t.Fatal(err)
	}
	// magic, FLG 0x60 (v1, independent blocks, no checksums), BD 0x40 (64 KiB), HC.
	if got := hex.EncodeToString(l4[:7]); got != "04224d18604082" {
		t.Fatalf("lz4 frame header %s", got)
	}
	if got := hex.EncodeToString(l4[len(l4)-4:]); got != "00000000" {
		t.Fatalf("lz4 frame does not end with an end mark: %s", got)
	}
	gz, err := codecs.Compress(nil, src, Gzip)
	if err != nil {
		t.Fatal(err)
	}
	if gz[0] != 0x1f || gz[1] != 0x8b || gz[2] != 8 {
		t.Fatalf("gzip header %x", gz[:3])
	}
	zs, err := codecs.Compress(nil, src, Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(zs[:4]); got != "28b52ffd" {
		t.Fatalf("zstd magic %s", got)
	}
}

func TestGoldenDecodeRejects(t *testing.T) {
	codecs := mustCodecs(t)
	tests := []struct {
		name  string
		codec Compression
		in    string
	}{
		{"gzip bad header", Gzip, "1f8c0800"},
		{"gzip truncated", Gzip, "1f8b0800000000000203cb48cdc9c957c84e"},
		{"gzip bad crc", Gzip, "1f8b0800000000000203cb48cdc9c957c84e4ccb4e0400d175816d0b000000"},
		{"snappy xerial short header", Snappy, "82534e415050590000"},
		{"snappy xerial chunk past end", Snappy, "82534e41505059000000000100000001" + "00000009" + "051068656c6c6f"},
		{"snappy xerial trailing bytes", Snappy, "82534e41505059000000000100000001" + "00000007" + "051068656c6c6f" + "00"},
		{"snappy block length lies", Snappy, "061068656c6c6f"},
		{"snappy copy before start", Snappy, "0909ff"},
		{"lz4 bad magic", LZ4, "05224d18604082"},
		{"lz4 truncated", LZ4, "04224d18604082" + "05000080" + "6865"},
		{"lz4 bad header checksum", LZ4, "04224d18604083" + "00000000"},
		{"zstd bad magic", Zstd, "28b52ffe2005290000"},
		{"zstd truncated", Zstd, "28b52ffd2005" + "290000" + "6865"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := codecs.Decompress(nil, mustHex(t, tt.in), tt.codec, 0); err == nil {
				t.Fatalf("decoded %q", got)
			}
		})
	}
}

var kgoCodecs = map[Compression]kgo.CompressionCodec{
	Gzip: kgo.GzipCompression(), Snappy: kgo.SnappyCompression(), LZ4: kgo.Lz4Compression(), Zstd: kgo.ZstdCompression(),
}

// TestKgoCodecs crosses our codecs with franz-go's client codecs, an
// independent implementation (its snappy is the raw block librdkafka sends).
func TestKgoCodecs(t *testing.T) {
	codecs := mustCodecs(t)
	dec := kgo.DefaultDecompressor()
	for name, p := range payloads() {
		for codec, kc := range kgoCodecs {
			t.Run(codec.String()+"/"+name, func(t *testing.T) {
				comp, err := kgo.DefaultCompressor(kc)
				if err != nil {
					t.Fatal(err)
				}
				theirs, used := comp.Compress(new(bytes.Buffer), p)
				if int8(used) == int8(codec) {
					got, err := codecs.Decompress(nil, theirs, codec, 0)
					if err != nil {
						t.Fatalf("decode kgo's %s: %v", codec, err)
					}
					if !bytes.Equal(got, p) {
						t.Fatalf("decode kgo's %s: wrong bytes", codec)
					}
				} else if name == "repetitive" {
					t.Fatalf("kgo did not compress a repetitive payload with %s", codec)
				}
				ours, err := codecs.Compress(nil, p, codec)
				if err != nil {
					t.Fatal(err)
				}
				got, err := dec.Decompress(ours, kgo.CompressionCodecType(codec))
				if err != nil {
					t.Fatalf("kgo decoding ours: %v", err)
				}
				if !bytes.Equal(got, p) {
					t.Fatal("kgo decoded our output to other bytes")
				}
			})
		}
	}
}

// TestCodecsConcurrent shares one Codecs between goroutines (run with -race).
func TestCodecsConcurrent(t *testing.T) {
	codecs := mustCodecs(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				p := bytes.Repeat([]byte(fmt.Sprintf("g%d-i%d ", g, i)), 500+i)
				codec := allCodecs[(g+i)%len(allCodecs)]
				c, err := codecs.Compress(nil, p, codec)
				if err != nil {
					errs <- err
					return
				}
				r, err := codecs.NewReader(c, codec)
				if err != nil {
					errs <- err
					return
				}
				d, err := io.ReadAll(r)
				r.Close()
				if err != nil || !bytes.Equal(d, p) {
					errs <- fmt.Errorf("goroutine %d round %d %s: %v", g, i, codec, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCompressUnknownCodec(t *testing.T) {
	codecs := mustCodecs(t)
	if _, err := codecs.Compress(nil, []byte("x"), 5); !errors.Is(err, ErrUnsupportedCompression) {
		t.Fatalf("Compress codec 5: %v", err)
	}
	if _, err := codecs.NewReader([]byte("x"), -1); !errors.Is(err, ErrUnsupportedCompression) {
		t.Fatalf("NewReader codec -1: %v", err)
	}
}
