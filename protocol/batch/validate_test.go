package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// wire builds record bytes by hand, independently of Build, so that tests
// can write what no correct encoder would.
type wire []byte

func (w wire) varint(v int64) wire { return binary.AppendVarint(w, v) }
func (w wire) byte(c byte) wire    { return append(w, c) }
func (w wire) raw(b ...byte) wire  { return append(w, b...) }
func (w wire) bytes(b string) wire { return w.varint(int64(len(b))).raw([]byte(b)...) }

// record wraps a body in its length prefix.
func record(body wire) wire { return wire(nil).varint(int64(len(body))).raw(body...) }

// body is a well-formed record body: attributes, deltas, key, value, no headers.
func body(tsDelta, offDelta int64, key, value string) wire {
	return wire(nil).byte(0).varint(tsDelta).varint(offDelta).bytes(key).bytes(value).varint(0)
}

// craft assembles a batch around raw records with header fields from h.
func craft(t *testing.T, h Header, raw []byte, codecs *Codecs) []byte {
	t.Helper()
	b, err := assemble(nil, &h, raw, codecs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hdr is a producer batch header for n records, with the given codec.
func hdr(n int32, codec Compression) Header {
	return Header{
		Attributes: int16(codec), LastOffsetDelta: n - 1, BaseTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, RecordCount: n,
	}
}

func validBatch(t *testing.T, codec Compression, n int) []byte {
	t.Helper()
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{OffsetDelta: int32(i), TimestampDelta: int64(i), Key: []byte("k"), Value: []byte("value")}
	}
	b, err := Build(BuildOptions{Compression: codec, BaseTimestamp: 1000}, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mutate copies b, applies f, and fixes the CRC unless keepCRC.
func mutate(b []byte, keepCRC bool, f func(b []byte)) []byte {
	c := bytes.Clone(b)
	f(c)
	if !keepCRC {
		UpdateCRC(c)
	}
	return c
}

func wantCode(t *testing.T, err error, code int16, sentinel error) {
	t.Helper()
	if got := KafkaCode(err); got != code {
		t.Fatalf("KafkaCode(%v) = %d, want %d", err, got, code)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Fatalf("error %v is not %v", err, sentinel)
	}
}

var (
	codeInvalid   = kerr.InvalidRecord.Code
	codeCorrupt   = kerr.CorruptMessage.Code
	codeTooLarge  = kerr.MessageTooLarge.Code
	codeCodec     = kerr.UnsupportedCompressionType.Code
	codeTimestamp = kerr.InvalidTimestamp.Code
)

func TestValidateBatchRules(t *testing.T) {
	codecs := mustCodecs(t)
	valid := validBatch(t, None, 3)
	validZstd := validBatch(t, Zstd, 3)
	tests := []struct {
		name     string
		b        []byte
		opts     ValidateOptions
		code     int16
		sentinel error
	}{
		{"valid", valid, ValidateOptions{}, 0, nil},
		{"valid at max.message.bytes", valid, ValidateOptions{MaxMessageBytes: int32(len(valid))}, 0, nil},
		{"empty", nil, ValidateOptions{}, codeInvalid, ErrTruncated},
		{"shorter than length prefix", valid[:11], ValidateOptions{}, codeInvalid, ErrTruncated},
		{"partial header", valid[:40], ValidateOptions{}, codeInvalid, ErrTruncated},
		{"missing last byte", valid[:len(valid)-1], ValidateOptions{}, codeInvalid, ErrTruncated},
		{"two batches", append(bytes.Clone(valid), valid...), ValidateOptions{}, codeInvalid, ErrInvalidRecord},
		{"trailing bytes", append(bytes.Clone(valid), 1, 2, 3), ValidateOptions{}, codeInvalid, ErrInvalidRecord},
		{"batch length below header", mutate(valid, true, func(b []byte) { binary.BigEndian.PutUint32(b[8:], 48) }), ValidateOptions{}, codeCorrupt, ErrCorrupt},
		{"magic 1", mutate(valid, true, func(b []byte) { b[16] = 1 }), ValidateOptions{}, codeInvalid, ErrUnsupportedMagic},
		{"magic 3", mutate(valid, true, func(b []byte) { b[16] = 3 }), ValidateOptions{}, codeCorrupt, ErrCorrupt},
		{"codec 5", mutate(valid, false, func(b []byte) { b[22] |= 5 }), ValidateOptions{}, codeCodec, ErrUnsupportedCompression},
		{"zstd in produce v6", validZstd, ValidateOptions{ProduceVersion: 6, Codecs: codecs}, codeCodec, ErrUnsupportedCompression},
		{"zstd in produce v7", validZstd, ValidateOptions{ProduceVersion: 7, Codecs: codecs}, 0, nil},
		{"base offset not 0", mutate(valid, true, func(b []byte) { SetBaseOffset(b, 5) }), ValidateOptions{}, codeInvalid, ErrInvalidRecord},
		{"over max.message.bytes", valid, ValidateOptions{MaxMessageBytes: int32(len(valid) - 1)}, codeTooLarge, ErrMessageTooLarge},
		{"bad crc", mutate(valid, true, func(b []byte) { b[len(b)-1] ^= 1 }), ValidateOptions{}, codeCorrupt, ErrCorrupt},
		{"crc over attributes", mutate(valid, true, func(b []byte) { b[22] ^= 0x10 }), ValidateOptions{}, codeCorrupt, ErrCorrupt},
		{"negative last offset delta", mutate(valid, false, func(b []byte) { binary.BigEndian.PutUint32(b[23:], 0xffffffff) }), ValidateOptions{}, codeInvalid, ErrInvalidRecord},
		{"zero record count", mutate(valid, false, func(b []byte) { binary.BigEndian.PutUint32(b[57:], 0) }), ValidateOptions{}, codeInvalid, ErrInvalidRecord},
		{"count and offset range differ", mutate(valid, false, func(b []byte) { binary.BigEndian.PutUint32(b[23:], 1) }), ValidateOptions{}, codeInvalid, ErrInvalidRecord},
		{"control batch", mutate(valid, false, func(b []byte) { b[22] |= ControlBit }), ValidateOptions{}, codeInvalid, ErrInvalidRecord},
		{"producer id without sequence", mutate(valid, false, func(b []byte) { binary.BigEndian.PutUint64(b[43:], 7) }), ValidateOptions{}, codeInvalid, ErrInvalidRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Validate(tt.b, tt.opts)
			wantCode(t, err, tt.code, tt.sentinel)
		})
	}
}

// TestValidateRecordStructure provokes every record-structure rule, for each
// codec: they must hold the same behind any compression.
func TestValidateRecordStructure(t *testing.T) {
	codecs := mustCodecs(t)
	ok := record(body(0, 0, "k", "v"))
	tests := []struct {
		name string
		n    int32 // records the header declares
		raw  wire
		code int16
	}{
		{"valid", 1, ok, 0},
		{"null key and value", 1, record(wire(nil).byte(0).varint(0).varint(0).varint(-1).varint(-1).varint(0)), 0},
		{"other negative lengths are null", 1, record(wire(nil).byte(0).varint(0).varint(0).varint(-7).varint(-2).varint(0)), 0},
		{"headers", 1, record(wire(nil).byte(0).varint(0).varint(0).bytes("k").bytes("v").varint(2).bytes("a").bytes("1").bytes("b").varint(-1)), 0},
		{"fewer records than declared", 2, ok, codeInvalid},
		{"more records than declared", 1, ok.raw(ok...), codeInvalid},
		{"trailing byte", 1, ok.byte(0), codeInvalid},
		{"no records", 1, nil, codeInvalid},
		{"negative record length", 1, wire(nil).varint(-3).raw(body(0, 0, "k", "v")...), codeInvalid},
		{"record length past the end", 1, wire(nil).varint(40).raw(body(0, 0, "k", "v")...), codeInvalid},
		{"record length short of its fields", 2, wire(nil).varint(5).raw(body(0, 0, "k", "v")...).raw(ok...), codeInvalid},
		{"record length beyond its fields", 2, wire(nil).varint(10).raw(body(0, 0, "k", "v")...).raw(ok...), codeInvalid},
		{"key past the record", 2, record(wire(nil).byte(0).varint(0).varint(0).varint(30).raw([]byte("k")...).varint(-1).varint(0)).raw(ok...), codeInvalid},
		{"negative header count", 1, record(wire(nil).byte(0).varint(0).varint(0).bytes("k").bytes("v").varint(-1)), codeInvalid},
		{"header count past the record", 1, record(wire(nil).byte(0).varint(0).varint(0).bytes("k").bytes("v").varint(1000)), codeInvalid},
		{"null header key", 1, record(wire(nil).byte(0).varint(0).varint(0).bytes("k").bytes("v").varint(1).varint(-1).bytes("x")), codeInvalid},
		{"varint too long", 1, record(wire(nil).byte(0).varint(0).raw(0xff, 0xff, 0xff, 0xff, 0xff, 0x01).bytes("k").bytes("v").varint(0)), codeInvalid},
		{"varlong too long", 1, record(wire(nil).byte(0).raw(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01).varint(0).bytes("k").bytes("v").varint(0)), codeInvalid},
		{"truncated varint", 1, wire(nil).raw(0xff), codeInvalid},
	}
	for _, codec := range allCodecs {
		for _, tt := range tests {
			t.Run(codec.String()+"/"+tt.name, func(t *testing.T) {
				b := craft(t, hdr(tt.n, codec), tt.raw, codecs)
				_, err := Validate(b, ValidateOptions{Codecs: codecs})
				wantCode(t, err, tt.code, nil)
				if tt.code == 0 {
					if _, _, err := ReadRecords(b, codecs); err != nil {
						t.Fatalf("ReadRecords: %v", err)
					}
				} else if _, _, err := ReadRecords(b, codecs); KafkaCode(err) != tt.code {
					t.Fatalf("ReadRecords err %v, want code %d", err, tt.code)
				}
			})
		}
	}
}

func TestValidateRecordRules(t *testing.T) {
	codecs := mustCodecs(t)
	const now = 1_000_000
	withKeys := func(keys ...bool) []byte {
		var raw wire
		for i, k := range keys {
			if k {
				raw = raw.raw(record(body(0, int64(i), "k", "v"))...)
			} else {
				raw = raw.raw(record(wire(nil).byte(0).varint(0).varint(int64(i)).varint(-1).bytes("v").varint(0))...)
			}
		}
		return craft(t, hdr(int32(len(keys)), Gzip), raw, codecs)
	}
	// withTimestamps has records at base 0 + deltas ts.
	withTimestamps := func(lat bool, maxTs int64, ts ...int64) []byte {
		var raw wire
		for i, d := range ts {
			raw = raw.raw(record(body(d, int64(i), "k", "v"))...)
		}
		h := hdr(int32(len(ts)), LZ4)
		h.BaseTimestamp, h.MaxTimestamp = 0, maxTs
		if lat {
			h.Attributes |= TimestampTypeBit
		}
		return craft(t, h, raw, codecs)
	}
	// Record 0 has a key and an old timestamp, record 1 no key.
	mixedHdr := hdr(2, Zstd)
	mixedHdr.BaseTimestamp = now - 5000
	mixed := craft(t, mixedHdr, record(body(0, 0, "k", "v")).raw(
		record(wire(nil).byte(0).varint(5000).varint(1).varint(-1).bytes("v").varint(0))...), codecs)
	window := ValidateOptions{CheckTimestamps: true, NowMs: now, TimestampBeforeMaxMs: 1000, TimestampAfterMaxMs: 10}
	tests := []struct {
		name    string
		b       []byte
		opts    ValidateOptions
		code    int16
		indexes []int32 // records reported in RecordErrors
	}{
		{"keys on compacted topic", withKeys(true, true), ValidateOptions{KeyRequired: true}, 0, nil},
		{"null key on plain topic", withKeys(true, false), ValidateOptions{}, 0, nil},
		{"null keys on compacted topic", withKeys(true, false, true, false), ValidateOptions{KeyRequired: true}, codeInvalid, []int32{1, 3}},
		{"empty key on compacted topic", craft(t, hdr(1, None), record(body(0, 0, "", "v")), codecs), ValidateOptions{KeyRequired: true}, 0, nil},
		{"timestamps unchecked by default", withTimestamps(false, 5, 1, 5), ValidateOptions{}, 0, nil},
		{"in window", withTimestamps(false, now+10, now-1000, now+10), window, 0, nil},
		{"too old", withTimestamps(false, now, now, now-1001), window, codeTimestamp, []int32{1}},
		{"too new", withTimestamps(false, now+11, now+11, now), window, codeTimestamp, []int32{0}},
		{"no timestamp is not range checked", withTimestamps(false, -1, -1), window, 0, nil},
		{"producer log append time", withTimestamps(true, 5, 0), ValidateOptions{}, 0, nil},
		{"producer log append time without timestamp", withTimestamps(true, -1, 0), ValidateOptions{}, codeTimestamp, []int32{0}},
		{"log append time topic", withTimestamps(true, 5, 0), ValidateOptions{LogAppendTime: true}, codeTimestamp, []int32{0}},
		{"log append time topic, create time batch", withTimestamps(false, 5, 0, 5), ValidateOptions{LogAppendTime: true}, 0, nil},
		{"key and timestamp errors", mixed, ValidateOptions{KeyRequired: true, CheckTimestamps: true, NowMs: now}, codeTimestamp, []int32{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Codecs = codecs
			_, err := Validate(tt.b, tt.opts)
			wantCode(t, err, tt.code, nil)
			if tt.code == 0 {
				return
			}
			var re *RecordErrors
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not *RecordErrors", err)
			}
			var got []int32
			for _, r := range re.Records {
				got = append(got, r.BatchIndex)
			}
			if !equalInt32s(got, tt.indexes) {
				t.Fatalf("record errors at %v, want %v", got, tt.indexes)
			}
		})
	}
}

func equalInt32s(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestCheckResult(t *testing.T) {
	codecs := mustCodecs(t)
	tests := []struct {
		name      string
		raw       wire
		n         int32
		maxTs     int64
		maxIdx    int32
		inOrder   bool
		uncompLen int
	}{
		{"in order", record(body(5, 0, "k", "v")).raw(record(body(9, 1, "k", "v"))...).raw(record(body(9, 2, "k", "v"))...), 3, 1009, 1, true, 0},
		{"deltas from 1", record(body(0, 1, "k", "v")).raw(record(body(0, 2, "k", "v"))...), 2, 1000, 0, false, 0},
		{"timestamps below -1 never count", record(body(-5000, 0, "k", "v")), 1, -1, -1, true, 0},
	}
	for _, codec := range []Compression{None, Snappy} {
		for _, tt := range tests {
			t.Run(codec.String()+"/"+tt.name, func(t *testing.T) {
				b := craft(t, hdr(tt.n, codec), tt.raw, codecs)
				res, err := Check(b, ValidateOptions{Codecs: codecs})
				if err != nil {
					t.Fatal(err)
				}
				if res.MaxTimestamp != tt.maxTs || res.MaxTimestampIndex != tt.maxIdx || res.OffsetsInOrder != tt.inOrder {
					t.Fatalf("result %+v, want max %d at %d, in order %v", res, tt.maxTs, tt.maxIdx, tt.inOrder)
				}
				if res.UncompressedBytes != int64(len(tt.raw)) {
					t.Fatalf("uncompressed %d, want %d", res.UncompressedBytes, len(tt.raw))
				}
			})
		}
	}
}

func TestValidateCompressedGarbage(t *testing.T) {
	codecs := mustCodecs(t)
	for _, codec := range allCodecs[1:] {
		t.Run(codec.String(), func(t *testing.T) {
			h := hdr(1, codec)
			rb := craft(t, Header{RecordCount: 1}, record(body(0, 0, "k", "v")), nil)
			// Put uncompressed records under a compressed codec: the decoder
			// must fail cleanly (snappy: a raw block that does not decode).
			b := bytes.Clone(rb)
			binary.BigEndian.PutUint16(b[21:], uint16(h.Attributes))
			UpdateCRC(b)
			_, err := Validate(b, ValidateOptions{Codecs: codecs})
			wantCode(t, err, codeInvalid, ErrInvalidRecord)
		})
	}
}

// TestValidateZipBomb: records decompressing past the bound fail without the
// payload ever being held.
func TestValidateZipBomb(t *testing.T) {
	codecs := mustCodecs(t)
	big := record(wire(nil).byte(0).varint(0).varint(0).varint(-1).varint(8 << 20).raw(make([]byte, 8<<20)...).varint(0))
	for _, codec := range allCodecs[1:] {
		t.Run(codec.String(), func(t *testing.T) {
			b := craft(t, hdr(1, codec), big, codecs)
			if len(b) > 1<<20 {
				t.Fatalf("test batch is %d bytes; not a bomb", len(b))
			}
			_, err := Validate(b, ValidateOptions{Codecs: codecs, MaxUncompressedBytes: 1 << 20})
			wantCode(t, err, codeTooLarge, ErrMessageTooLarge)
			if _, err := Validate(b, ValidateOptions{Codecs: codecs, MaxUncompressedBytes: 9 << 20}); err != nil {
				t.Fatalf("within bound: %v", err)
			}
		})
	}
}

func TestSetMaxTimestamp(t *testing.T) {
	b := validBatch(t, None, 2)
	before := bytes.Clone(b)
	SetMaxTimestamp(b, false, 1001) // already so
	if !bytes.Equal(b, before) {
		t.Fatal("unchanged timestamp rewrote the batch")
	}
	SetMaxTimestamp(b, true, 77)
	h, err := Validate(b, ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !h.LogAppendTime() || h.MaxTimestamp != 77 {
		t.Fatalf("header %+v", h)
	}
	SetMaxTimestamp(b, false, 5)
	if h, _ = ParseHeader(b); h.LogAppendTime() || h.MaxTimestamp != 5 || CheckCRC(b, &h) != nil {
		t.Fatalf("header %+v", h)
	}
}

func TestKafkaCode(t *testing.T) {
	tests := []struct {
		err  error
		code int16
	}{
		{nil, 0},
		{ErrCorrupt, codeCorrupt},
		{ErrTruncated, codeCorrupt},
		{ErrInvalidRecord, codeInvalid},
		{ErrUnsupportedMagic, codeInvalid},
		{ErrInvalidTimestamp, codeTimestamp},
		{ErrMessageTooLarge, codeTooLarge},
		{ErrUnsupportedCompression, codeCodec},
		{&RecordErrors{Cause: ErrInvalidTimestamp}, codeTimestamp},
		{errors.New("other"), kerr.UnknownServerError.Code},
	}
	for _, tt := range tests {
		if got := KafkaCode(tt.err); got != tt.code {
			t.Errorf("KafkaCode(%v) = %d, want %d", tt.err, got, tt.code)
		}
	}
}

// TestRecordErrorsBounded: a batch whose every record fails lists the first
// MaxRecordErrors and counts them all, so a rejected batch costs bounded
// memory however many records it packs.
func TestRecordErrorsBounded(t *testing.T) {
	n := MaxRecordErrors + 5
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = Record{OffsetDelta: int32(i), Value: []byte("v")}
	}
	b, err := Build(BuildOptions{Compression: LZ4, BaseTimestamp: 1000}, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Validate(b, ValidateOptions{KeyRequired: true})
	var re *RecordErrors
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not *RecordErrors", err)
	}
	if re.Total != n || len(re.Records) != MaxRecordErrors || re.Records[MaxRecordErrors-1].BatchIndex != MaxRecordErrors-1 {
		t.Fatalf("total %d, %d listed (last %d); want total %d, %d listed", re.Total, len(re.Records), re.Records[len(re.Records)-1].BatchIndex, n, MaxRecordErrors)
	}
}
