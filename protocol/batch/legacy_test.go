package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/internal/testutil"
)

// legacySample is what the conversion tests send: a null key, an empty
// value and a null value among them.
var legacySample = []testutil.LegacyMessage{
	{Key: []byte("k0"), Value: []byte("v0"), Timestamp: 1_700_000_000_000},
	{Key: nil, Value: []byte(""), Timestamp: 1_700_000_000_005},
	{Key: []byte("k2"), Value: nil, Timestamp: 1_699_999_999_999},
}

// legacySet encodes msgs as a message set of magic, wrapped in one
// compressed message when codec is not None.
func legacySet(t testing.TB, magic int8, codec Compression, msgs []testutil.LegacyMessage) []byte {
	t.Helper()
	b, err := testutil.LegacyMessageSet(magic, int8(codec), msgs, func(set []byte) ([]byte, error) {
		return MustCodecs().Compress(nil, set, codec)
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConvertLegacy(t *testing.T) {
	codecs := MustCodecs()
	for _, magic := range []int8{0, 1} {
		for _, codec := range []Compression{None, Gzip, Snappy, LZ4} {
			if magic == 0 && codec == LZ4 {
				continue // magic 0 LZ4 has its own test (Kafka's broken frame checksum)
			}
			t.Run(fmt.Sprintf("magic%d-%s", magic, codec), func(t *testing.T) {
				in := legacySet(t, magic, codec, legacySample)
				if !IsLegacy(in) {
					t.Fatal("IsLegacy false for a legacy set")
				}
				b, err := ConvertLegacy(in, codecs, 0)
				if err != nil {
					t.Fatal(err)
				}
				checkConverted(t, b, magic, codec, legacySample)
			})
		}
	}
}

// checkConverted asserts that b is a valid v2 producer batch of codec
// holding want in order, with magic 0's missing timestamps as -1.
func checkConverted(t *testing.T, b []byte, magic int8, codec Compression, want []testutil.LegacyMessage) {
	t.Helper()
	res, err := Check(b, ValidateOptions{})
	if err != nil {
		t.Fatalf("converted batch does not validate: %v", err)
	}
	h, recs, err := ReadRecords(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.Magic != MagicV2 || h.Compression() != codec || h.RecordCount != int32(len(want)) || h.HasProducerID() || h.LogAppendTime() {
		t.Fatalf("header %+v, want magic 2, %s, %d records, no producer, CreateTime", h, codec, len(want))
	}
	wantMax := int64(-1)
	for i, r := range recs {
		ts := int64(-1)
		if magic > 0 {
			ts = want[i].Timestamp
		}
		wantMax = max(wantMax, ts)
		got := h.BaseTimestamp + r.TimestampDelta
		if r.OffsetDelta != int32(i) || got != ts || !sameBytes(r.Key, want[i].Key) || !sameBytes(r.Value, want[i].Value) {
			t.Errorf("record %d: delta %d ts %d key %q value %q; want %d %d %q %q",
				i, r.OffsetDelta, got, r.Key, r.Value, i, ts, want[i].Key, want[i].Value)
		}
	}
	if h.MaxTimestamp != wantMax || res.MaxTimestamp != wantMax {
		t.Errorf("max timestamp %d (validated %d), want %d", h.MaxTimestamp, res.MaxTimestamp, wantMax)
	}
}

// sameBytes is bytes.Equal that tells null from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// TestConvertLegacyMessageSetShapes: several uncompressed messages, several
// wrappers (the codec is the set's), and a partial trailing message, which
// Kafka trims.
func TestConvertLegacyMessageSetShapes(t *testing.T) {
	twoWrappers := append(legacySet(t, 1, Gzip, legacySample[:2]), legacySet(t, 1, Gzip, legacySample[2:])...)
	b, err := ConvertLegacy(twoWrappers, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkConverted(t, b, 1, Gzip, legacySample)

	full := legacySet(t, 0, None, legacySample)
	cut := append(bytes.Clone(full), legacySet(t, 0, None, legacySample[:1])[:20]...)
	if b, err = ConvertLegacy(cut, nil, 0); err != nil {
		t.Fatal(err)
	}
	checkConverted(t, b, 0, None, legacySample)
}

func TestConvertLegacyRejects(t *testing.T) {
	m := func(magic int8, attrs int8, value []byte) []byte {
		return testutil.AppendLegacyMessage(nil, magic, testutil.LegacyMessage{Attributes: attrs, Key: []byte("k"), Value: value})
	}
	compress := func(codec Compression, set []byte) []byte {
		v, err := MustCodecs().Compress(nil, set, codec)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	badCRC := m(1, 0, []byte("v"))
	badCRC[len(badCRC)-1] ^= 1
	badLen := testutil.AppendLegacyMessage(nil, 0, testutil.LegacyMessage{Key: []byte("k"), Value: []byte("v")})
	binary.BigEndian.PutUint32(badLen[8:], 13) // below the minimum size
	bomb := m(1, int8(Gzip), compress(Gzip, bytes.Repeat(m(1, 0, make([]byte, 1<<16)), 40)))
	cases := []struct {
		name string
		in   []byte
		code int16
	}{
		{"empty", nil, kerr.InvalidRecord.Code},
		{"only a partial message", m(0, 0, []byte("v"))[:15], kerr.InvalidRecord.Code},
		{"bad crc", badCRC, kerr.CorruptMessage.Code},
		{"size below minimum", badLen, kerr.CorruptMessage.Code},
		{"mixed magic", append(m(0, 0, []byte("a")), m(1, 0, []byte("b"))...), kerr.InvalidRecord.Code},
		{"zstd", m(1, int8(Zstd), compress(Zstd, m(1, 0, []byte("v")))), kerr.UnsupportedCompressionType.Code},
		{"codec 7", m(1, 7, []byte("v")), kerr.UnsupportedCompressionType.Code},
		{"null wrapper value", m(1, int8(Gzip), nil), kerr.InvalidRecord.Code},
		{"nested compression", m(1, int8(Gzip), compress(Gzip, m(1, int8(Gzip), []byte("x")))), kerr.InvalidRecord.Code},
		{"inner magic differs", m(1, int8(Gzip), compress(Gzip, m(0, 0, []byte("x")))), kerr.InvalidRecord.Code},
		{"inner message cut", m(1, int8(Snappy), compress(Snappy, m(1, 0, []byte("xyz"))[:25])), kerr.CorruptMessage.Code},
		{"garbage compressed value", m(1, int8(Gzip), []byte("not gzip")), kerr.InvalidRecord.Code},
		{"decompresses past the bound", bomb, kerr.MessageTooLarge.Code},
	}
	for _, tc := range cases {
		_, err := ConvertLegacy(tc.in, nil, 1<<20)
		if got := KafkaCode(err); got != tc.code {
			t.Errorf("%s: %v (code %d), want code %d", tc.name, err, got, tc.code)
		}
	}
}

// FuzzConvertLegacy: the legacy decoder must never panic, must classify
// every error, and what it accepts must be a valid v2 batch.
func FuzzConvertLegacy(f *testing.F) {
	f.Add([]byte{}, false)
	f.Add(make([]byte, 40), true)
	maxLen := make([]byte, 40)
	binary.BigEndian.PutUint32(maxLen[8:], 0x7fffffff)
	f.Add(maxLen, false)
	for _, magic := range []int8{0, 1} {
		for _, codec := range []Compression{None, Gzip, Snappy, LZ4} {
			s := legacySet(f, magic, codec, legacySample)
			f.Add(s, false)
			f.Add(append(bytes.Clone(s), 0xff, 0, 1), true)
		}
	}
	codecs := MustCodecs()
	f.Fuzz(func(t *testing.T, b []byte, fixCRC bool) {
		// Most mutations break a CRC; fixing them lets the fuzzer reach
		// the fields and the compressed payloads behind them.
		if fixCRC {
			b = fixLegacyCRCs(b)
		}
		out, err := ConvertLegacy(b, codecs, 4<<20)
		if err != nil {
			if KafkaCode(err) == kerr.UnknownServerError.Code {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if _, err := Check(out, ValidateOptions{Codecs: codecs}); err != nil && !errors.As(err, new(*RecordErrors)) {
			t.Fatalf("converted batch does not validate: %v", err)
		}
	})
}

// TestConvertLegacyLZ4Magic0 reads a magic 0 LZ4 wrapper whose frame header
// checksum covers the magic number, as Kafka 0.8-0.9 and librdkafka write
// it for magic 0, and one with the correct checksum.
func TestConvertLegacyLZ4Magic0(t *testing.T) {
	var set []byte
	for i, m := range legacySample {
		m.Offset = int64(i)
		set = testutil.AppendLegacyMessage(set, 0, m)
	}
	frame, err := MustCodecs().Compress(nil, set, LZ4)
	if err != nil {
		t.Fatal(err)
	}
	descEnd := 6
	if frame[4]&0x08 != 0 {
		descEnd += 8
	}
	broken := bytes.Clone(frame)
	broken[descEnd] = byte(xxh32Small(frame[:descEnd]) >> 8)
	if broken[descEnd] == frame[descEnd] {
		t.Fatal("test frame: broken and correct checksums coincide")
	}
	for name, value := range map[string][]byte{"broken checksum": broken, "correct checksum": frame} {
		in := testutil.AppendLegacyMessage(nil, 0, testutil.LegacyMessage{Offset: 2, Attributes: int8(LZ4), Value: value})
		b, err := ConvertLegacy(in, nil, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkConverted(t, b, 0, LZ4, legacySample)
	}
}

// fixLegacyCRCs returns b with the CRC of each complete top-level message
// recomputed.
func fixLegacyCRCs(b []byte) []byte {
	b = bytes.Clone(b)
	for pos := 0; len(b)-pos >= legacyLogOverhead+legacyOverheadV0; {
		size := int(int32(binary.BigEndian.Uint32(b[pos+legacyOffMessageSize:])))
		end := pos + legacyLogOverhead + size
		if size < legacyOverheadV0 || end > len(b) {
			break
		}
		binary.BigEndian.PutUint32(b[pos+legacyOffCRC:], crc32.ChecksumIEEE(b[pos+legacyOffMagic:end]))
		pos = end
	}
	return b
}
