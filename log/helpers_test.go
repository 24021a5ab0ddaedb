package log

import (
	"encoding/binary"
	"github.com/brook-mq/brook/internal/testutil"
	"hash/crc32"
	"testing"
	"time"

	"github.com/brook-mq/brook/protocol/batch"
)

// testRecord is one record for buildBatch.
type testRecord struct {
	key, value []byte
	tsDelta    int64
}

// batchSpec describes a batch for buildBatch.
type batchSpec struct {
	baseTimestamp int64
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	attributes    int16
}

func plainSpec(ts int64) batchSpec {
	return batchSpec{baseTimestamp: ts, producerID: -1, producerEpoch: -1, baseSequence: -1}
}

// buildBatch encodes an uncompressed v2 batch as a producer would send it
// (baseOffset 0, no leader epoch).
func buildBatch(spec batchSpec, recs []testRecord) []byte {
	var body []byte
	var maxDelta int64
	for i, r := range recs {
		var rec []byte
		rec = append(rec, 0)
		rec = binary.AppendVarint(rec, r.tsDelta)
		rec = binary.AppendVarint(rec, int64(i))
		if r.key == nil {
			rec = binary.AppendVarint(rec, -1)
		} else {
			rec = binary.AppendVarint(rec, int64(len(r.key)))
			rec = append(rec, r.key...)
		}
		rec = binary.AppendVarint(rec, int64(len(r.value)))
		rec = append(rec, r.value...)
		rec = binary.AppendVarint(rec, 0)
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
		maxDelta = max(maxDelta, r.tsDelta)
	}
	b := make([]byte, batch.HeaderSize, batch.HeaderSize+len(body))
	binary.BigEndian.PutUint64(b[0:], 0)
	binary.BigEndian.PutUint32(b[8:], uint32(batch.HeaderSize-batch.LengthPrefix+len(body)))
	binary.BigEndian.PutUint32(b[12:], 0xffffffff)
	b[16] = batch.MagicV2
	binary.BigEndian.PutUint16(b[21:], uint16(spec.attributes))
	binary.BigEndian.PutUint32(b[23:], uint32(len(recs)-1))
	binary.BigEndian.PutUint64(b[27:], uint64(spec.baseTimestamp))
	binary.BigEndian.PutUint64(b[35:], uint64(spec.baseTimestamp+maxDelta))
	binary.BigEndian.PutUint64(b[43:], uint64(spec.producerID))
	binary.BigEndian.PutUint16(b[51:], uint16(spec.producerEpoch))
	binary.BigEndian.PutUint32(b[53:], uint32(spec.baseSequence))
	binary.BigEndian.PutUint32(b[57:], uint32(len(recs)))
	b = append(b, body...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// nRecords builds n records of size bytes each with increasing timestamps.
func nRecords(n, size int) []testRecord {
	recs := make([]testRecord, n)
	for i := range recs {
		v := make([]byte, size)
		for j := range v {
			v[j] = byte(i + j)
		}
		recs[i] = testRecord{key: []byte{byte(i)}, value: v, tsDelta: int64(i)}
	}
	return recs
}

func newManualClock() *testutil.Clock {
	return testutil.NewClock(time.UnixMilli(1_700_000_000_000))
}

// smallConfig rolls often so that tests exercise many segments.
func smallConfig() Config {
	c := DefaultConfig()
	c.SegmentBytes = 8 << 10
	c.IndexIntervalBytes = 512
	c.FileDeleteDelayMs = 0
	return c
}

func openTestLog(t testing.TB, dir string, cfg Config, clock *testutil.Clock, opts Options) *Log {
	t.Helper()
	opts.Now = clock.Now
	l, err := Open(dir, cfg, opts)
	if err != nil {
		t.Fatalf("open log: %v", err)
	}
	return l
}

// appended is what the model remembers of one appended batch.
type appended struct {
	first, last int64
	data        []byte // as stored, offsets assigned
}

func mustAppend(t testing.TB, l *Log, b []byte, epoch int32) appended {
	t.Helper()
	info, err := l.Append(b, epoch)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return appended{first: info.FirstOffset, last: info.LastOffset, data: b}
}

func readAllSlice(t testing.TB, s Slice) []byte {
	t.Helper()
	b, err := s.ReadInto(nil)
	if err != nil {
		t.Fatalf("read slice: %v", err)
	}
	return b
}
