package batch

import (
	"errors"
	"fmt"
	"io"
)

// EachBatch calls fn for each whole batch at the start of data (raw
// batches as a log read returns them), after checking its CRC, and returns
// the offset after the last batch it passed to fn (-1 if none) and how
// many it passed. A partial batch at the end is where a read stopped, not
// an error; a bad header or CRC is, and so is fn's error. The coordinators
// replay their internal topics with it.
func EachBatch(data []byte, fn func(h *Header, b []byte) error) (next int64, n int, err error) {
	next = -1
	for len(data) > 0 {
		h, rest, err := Next(data)
		if errors.Is(err, ErrTruncated) {
			break
		}
		if err != nil {
			return next, n, fmt.Errorf("parse batch header: %w", err)
		}
		b := data[:h.Size()]
		if err := CheckCRC(b, &h); err != nil {
			return next, n, fmt.Errorf("batch at %d: %w", h.BaseOffset, err)
		}
		if err := fn(&h, b); err != nil {
			return next, n, fmt.Errorf("batch at %d: %w", h.BaseOffset, err)
		}
		next = h.LastOffset() + 1
		n++
		data = rest
	}
	return next, n, nil
}

// EachKeyedRecord calls fn with the key and value of each record of batch b
// that has a key (keyless records mean nothing in a compacted internal
// topic and are skipped), decompressing through codecs.
func EachKeyedRecord(b []byte, codecs *Codecs, fn func(key, value []byte) error) error {
	rr, err := Records(b, codecs)
	if err != nil {
		return err
	}
	defer rr.Close()
	for {
		rec, err := rr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if rec.Key == nil {
			continue
		}
		if err := fn(rec.Key, rec.Value); err != nil {
			return err
		}
	}
}
