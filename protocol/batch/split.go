package batch

import "errors"

// Next splits the first batch off b: its header and the bytes after it. It
// checks the header only (not the CRC), so that stepping through a fetch
// response or a segment stays cheap. A b shorter than the batch it starts
// gives ErrTruncated, which at the end of a fetch response is normal.
func Next(b []byte) (Header, []byte, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, b, err
	}
	if len(b) < h.Size() {
		return h, b, ErrTruncated
	}
	return h, b[h.Size():], nil
}

// Split cuts b into whole batches. A trailing partial batch is not an
// error: it is returned as rest, as Kafka's consumers skip one at the end
// of a fetch response. Any other framing error stops the split.
func Split(b []byte) (batches [][]byte, rest []byte, err error) {
	for len(b) > 0 {
		h, after, err := Next(b)
		if errors.Is(err, ErrTruncated) {
			return batches, b, nil
		}
		if err != nil {
			return batches, b, err
		}
		batches = append(batches, b[:h.Size():h.Size()])
		b = after
	}
	return batches, nil, nil
}
