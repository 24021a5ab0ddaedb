package batch

// The fast path of the validation walk. Validating a produced batch reads
// every record once (Kafka's skipKeyValueIterator); going through source's
// byte-at-a-time reader, which serves both slices and decompressing
// streams, cost ~150 ns per 100-byte record, the largest cost of a produce
// of small records after the write itself. scanRecord parses one record
// straight from a byte slice and only says whether it is well formed: on
// any doubt (a fault, or a record not wholly in the slice) the caller runs
// the ordinary reader on the same bytes, which then reports the fault with
// exactly the error it always did. So scanRecord must accept only what
// recordBody accepts, with the same results (FuzzScanRecord checks).

// scanned is what the validation walk needs of one record.
type scanned struct {
	timestampDelta int64
	offsetDelta    int32
	hasKey         bool
}

// scanUvarint is source.uvarint over p from pos: the same bytes, the same
// overflow (bits past 64 dropped, as the reader's shift drops them).
func scanUvarint(p []byte, pos, maxLen int) (uint64, int, bool) {
	var x uint64
	for i := 0; i < maxLen; i++ {
		if pos >= len(p) {
			return 0, pos, false
		}
		c := p[pos]
		pos++
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, pos, true
		}
	}
	return 0, pos, false
}

func scanVarint(p []byte, pos int) (int32, int, bool) {
	u, pos, ok := scanUvarint(p, pos, maxVarintLen32)
	v := uint32(u)
	return int32(v>>1) ^ -int32(v&1), pos, ok
}

// scanBytes skips a length-prefixed field within p (p ends where the
// record ends); null reports a negative length.
func scanBytes(p []byte, pos int) (next int, null, ok bool) {
	n, pos, ok := scanVarint(p, pos)
	if !ok {
		return pos, false, false
	}
	if n < 0 {
		return pos, true, true
	}
	if int(n) > len(p)-pos {
		return pos, false, false
	}
	return pos + int(n), false, true
}

// scanRecord parses the record at the start of p and returns its size
// (length prefix included). ok is false when the record is malformed or not
// wholly in p; nothing else differs from readRecord without keep.
func scanRecord(p []byte) (rec scanned, size int, ok bool) {
	length, pos, ok := scanVarint(p, 0)
	if !ok || length < 0 || int(length) > len(p)-pos {
		return rec, 0, false
	}
	end := pos + int(length)
	body := p[:end] // every field must end within the record
	if pos >= end {
		return rec, 0, false
	}
	pos++ // attributes
	u, pos, ok := scanUvarint(body, pos, maxVarintLen64)
	if !ok {
		return rec, 0, false
	}
	rec.timestampDelta = int64(u>>1) ^ -int64(u&1)
	if rec.offsetDelta, pos, ok = scanVarint(body, pos); !ok {
		return rec, 0, false
	}
	var null bool
	if pos, null, ok = scanBytes(body, pos); !ok {
		return rec, 0, false
	}
	rec.hasKey = !null
	if pos, _, ok = scanBytes(body, pos); !ok {
		return rec, 0, false
	}
	count, pos, ok := scanVarint(body, pos)
	if !ok || count < 0 || int(count) > end-pos {
		return rec, 0, false
	}
	for range count {
		if pos, null, ok = scanBytes(body, pos); !ok || null {
			return rec, 0, false
		}
		if pos, _, ok = scanBytes(body, pos); !ok {
			return rec, 0, false
		}
	}
	if pos != end {
		return rec, 0, false
	}
	return rec, end, true
}

// skipRecord is readRecord without keep, through scanRecord when the
// record is wholly in the slice or in the stream's buffer.
func (s *source) skipRecord() (scanned, error) {
	if s.r == nil {
		if rec, n, ok := scanRecord(s.buf[s.pos:]); ok {
			s.pos += n
			return rec, nil
		}
	} else if p, _ := s.r.Peek(s.r.Buffered()); len(p) > 0 { // Peek of what is buffered never reads
		if rec, n, ok := scanRecord(p); ok && int64(n) <= s.limit-s.n {
			s.r.Discard(n) // buffered: cannot fail
			s.n += int64(n)
			return rec, nil
		}
	}
	rec, hasKey, err := s.readRecord(false)
	return scanned{timestampDelta: rec.TimestampDelta, offsetDelta: rec.OffsetDelta, hasKey: hasKey}, err
}
