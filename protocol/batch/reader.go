package batch

import (
	"bufio"
	"io"
)

// RecordReader iterates over the records of one batch, decompressing as it
// goes. It checks the record structure as Kafka's DefaultRecord does, but
// not the CRC nor the topic's rules: use Validate for produced batches.
//
// Keys, values and header values of an uncompressed batch alias the batch's
// bytes; those of a compressed batch are fresh copies.
type RecordReader struct {
	h         Header
	src       source
	remaining int32 // records not yet read
	closer    io.Closer
	br        *bufio.Reader
	codecs    *Codecs
	// block, for the validation walk of a raw snappy block, holds the
	// decoded records that src walks as a slice (initSnappyBlock).
	block *snappyReader
	err   error // sticky
}

// Records starts reading the records of the batch at the start of b (bytes
// past the batch are ignored). codecs may be nil for uncompressed batches.
// Close the reader to return pooled decoders.
func Records(b []byte, codecs *Codecs) (*RecordReader, error) {
	return newRecordReader(b, codecs, DefaultMaxUncompressedBytes)
}

func newRecordReader(b []byte, codecs *Codecs, limit int64) (*RecordReader, error) {
	r := &RecordReader{}
	if err := r.init(b, codecs, limit); err != nil {
		return nil, err
	}
	return r, nil
}

// init is newRecordReader into r, so that the validation walk keeps its
// reader on the stack.
func (r *RecordReader) init(b []byte, codecs *Codecs, limit int64) error {
	h, err := ParseHeader(b)
	if err != nil {
		return err
	}
	if len(b) < h.Size() {
		return ErrTruncated
	}
	if h.RecordCount < 0 {
		return invalidf("negative record count %d", h.RecordCount)
	}
	*r = RecordReader{h: h, remaining: h.RecordCount}
	payload := b[HeaderSize:h.Size()]
	codec := h.Compression()
	if codec == None {
		r.src = source{buf: payload}
		return nil
	}
	if !codec.Valid() {
		return ErrUnsupportedCompression
	}
	if codecs == nil {
		// Correct but slow: callers on a hot path pass the broker's Codecs.
		codecs = MustCodecs()
	}
	dec, err := codecs.newReader(payload, codec, limit)
	if err != nil {
		return streamErr(err)
	}
	r.codecs = codecs
	r.closer = dec
	r.br = codecs.bufReader(dec)
	r.src = source{r: r.br, limit: limit}
	return nil
}

// initSnappyBlock is init for the validation walk, which keeps no record,
// of a batch compressed as one raw snappy block (franz-go's default): the
// block is decoded whole, as the stream would decode it, and walked as a
// slice, without the copy into the stream's buffer and the Peek and
// Discard per record. Records must not be kept (they would alias the
// pooled block). ok is false, and r untouched, for any other batch or a
// block that does not decode; init then reads it as a stream, which names
// the fault.
// h is b's parsed header.
func (r *RecordReader) initSnappyBlock(b []byte, h *Header, codecs *Codecs, limit int64) bool {
	if codecs == nil || len(b) < h.Size() || h.RecordCount < 0 || h.Compression() != Snappy {
		return false
	}
	out, block, ok := codecs.snappyBlock(b[HeaderSize:h.Size()], limit)
	if !ok {
		return false
	}
	*r = RecordReader{h: *h, remaining: h.RecordCount, codecs: codecs, block: block, src: source{buf: out}}
	return true
}

// Header is the batch's header.
func (r *RecordReader) Header() Header { return r.h }

// Next returns the next record, or io.EOF once recordCount records were
// read and nothing follows them. Any error is sticky.
func (r *RecordReader) Next() (Record, error) {
	rec, _, err := r.next(true)
	return rec, err
}

func (r *RecordReader) next(keep bool) (Record, bool, error) {
	if err := r.checkMore(); err != nil {
		return Record{}, false, err
	}
	rec, hasKey, err := r.src.readRecord(keep)
	if err != nil {
		r.err = err
		return Record{}, false, err
	}
	r.remaining--
	return rec, hasKey, nil
}

// skip is next without keep for the validation walk, through the fast
// scan (scan.go). The common case, a short record of an uncompressed
// batch, is handled here with a single call.
func (r *RecordReader) skip() (scanned, error) {
	if r.remaining > 0 && r.err == nil && r.src.r == nil {
		if rec, n, ok := scanShortRecord(r.src.buf[r.src.pos:]); ok {
			r.src.pos += n
			r.remaining--
			return rec, nil
		}
	}
	if err := r.checkMore(); err != nil {
		return scanned{}, err
	}
	rec, err := r.src.skipRecord()
	if err != nil {
		r.err = err
		return scanned{}, err
	}
	r.remaining--
	return rec, nil
}

// checkMore returns the sticky error, or once recordCount records were
// read io.EOF if nothing follows them.
func (r *RecordReader) checkMore() error {
	if r.err != nil {
		return r.err
	}
	if r.remaining == 0 {
		end, err := r.src.atEnd()
		switch {
		case err != nil:
			r.err = err
		case !end:
			r.err = invalidf("bytes remain after %d records", r.h.RecordCount)
		default:
			r.err = io.EOF
		}
		return r.err
	}
	return nil
}

// Close releases the decoders; the reader must not be used afterwards.
func (r *RecordReader) Close() error {
	if r.closer != nil {
		r.closer.Close()
		r.codecs.putBufReader(r.br)
		r.closer, r.br = nil, nil
		r.src = source{}
	}
	if r.block != nil {
		r.codecs.putSnappy(r.block)
		r.block = nil
		r.src = source{}
	}
	if r.err == nil {
		r.err = io.ErrClosedPipe
	}
	return nil
}

// ReadRecords returns all records of the batch at the start of b.
func ReadRecords(b []byte, codecs *Codecs) (Header, []Record, error) {
	r, err := Records(b, codecs)
	if err != nil {
		return Header{}, nil, err
	}
	defer r.Close()
	recs := make([]Record, 0, min(int(r.h.RecordCount), 1024))
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return r.h, recs, nil
		}
		if err != nil {
			return r.h, recs, err
		}
		recs = append(recs, rec)
	}
}
