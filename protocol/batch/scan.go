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

// shortVarint reads a zig-zag varint of one or two bytes (values from
// -8192 to 8191) and declines anything longer or cut short. It has no loop
// and no call, so the compiler inlines it: in a record of up to 8 KiB with
// small deltas every varint is this short (a 100-byte record: the length
// and value length take two bytes, the rest one), and the walk's cost per
// record was mostly calls and loops over single bytes.
func shortVarint(p []byte, pos int) (int32, int, bool) {
	if uint(pos) >= uint(len(p)) {
		return 0, pos, false
	}
	u := uint32(p[pos])
	if u >= 0x80 {
		if uint(pos+1) >= uint(len(p)) || p[pos+1] >= 0x80 {
			return 0, pos, false
		}
		pos++
		u = u&0x7f | uint32(p[pos])<<7
	}
	return int32(u>>1) ^ -int32(u&1), pos + 1, true
}

// scanShortRecord is scanRecord for records whose varints are all short
// (shortVarint); ok is false for any other record, which scanRecord then
// reads. It accepts only what scanRecord accepts, with the same results
// (FuzzScanRecord checks).
func scanShortRecord(p []byte) (rec scanned, size int, ok bool) {
	length, pos, ok := shortVarint(p, 0)
	if !ok || length <= 0 || int(length) > len(p)-pos {
		return rec, 0, false
	}
	end := pos + int(length)
	body := p[:end]
	pos++ // attributes: length > 0, so within the record
	ts, pos, ok := shortVarint(body, pos)
	if !ok {
		return rec, 0, false
	}
	rec.timestampDelta = int64(ts)
	if rec.offsetDelta, pos, ok = shortVarint(body, pos); !ok {
		return rec, 0, false
	}
	n, pos, ok := shortVarint(body, pos) // key
	if !ok || int(n) > end-pos {
		return rec, 0, false
	}
	if rec.hasKey = n >= 0; rec.hasKey {
		pos += int(n)
	}
	n, pos, ok = shortVarint(body, pos) // value
	if !ok || int(n) > end-pos {
		return rec, 0, false
	}
	if n > 0 {
		pos += int(n)
	}
	count, pos, ok := shortVarint(body, pos)
	if !ok || count < 0 || int(count) > end-pos {
		return rec, 0, false
	}
	for range count {
		n, pos, ok = shortVarint(body, pos) // header key: not null
		if !ok || n < 0 || int(n) > end-pos {
			return rec, 0, false
		}
		pos += int(n)
		n, pos, ok = shortVarint(body, pos)
		if !ok || int(n) > end-pos {
			return rec, 0, false
		}
		if n > 0 {
			pos += int(n)
		}
	}
	if pos != end {
		return rec, 0, false
	}
	return rec, end, true
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
		p := s.buf[s.pos:]
		rec, n, ok := scanShortRecord(p)
		if !ok {
			rec, n, ok = scanRecord(p)
		}
		if ok {
			s.pos += n
			return rec, nil
		}
	} else if p, _ := s.r.Peek(s.r.Buffered()); len(p) > 0 { // Peek of what is buffered never reads
		rec, n, ok := scanShortRecord(p)
		if !ok {
			rec, n, ok = scanRecord(p)
		}
		if ok && int64(n) <= s.limit-s.n {
			s.r.Discard(n) // buffered: cannot fail
			s.n += int64(n)
			return rec, nil
		}
	}
	rec, hasKey, err := s.readRecord(false)
	return scanned{timestampDelta: rec.TimestampDelta, offsetDelta: rec.OffsetDelta, hasKey: hasKey}, err
}
