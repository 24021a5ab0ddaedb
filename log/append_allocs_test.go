package log

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/brook-mq/brook/protocol/batch"
)

// TestAppendAllocations: a leader append of an idempotent producer's
// uncompressed batch (validation, the sequence check, the write, the
// producer state) allocates nothing once the producer is known and the
// index needs no new entry.
func TestAppendAllocations(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 1 << 30
	l := openTestLog(t, filepath.Join(t.TempDir(), "allocs-0"), cfg, newManualClock(), Options{})
	defer l.Close()
	spec := batchSpec{baseTimestamp: 1_700_000_000_000, producerID: 7, producerEpoch: 0}
	recs := nRecords(100, 100)
	b := buildBatch(spec, recs)
	seq := int32(0)
	appendNext := func() {
		binary.BigEndian.PutUint64(b[0:], 0)
		binary.BigEndian.PutUint32(b[53:], uint32(seq))
		batch.UpdateCRC(b)
		seq += int32(len(recs))
		info, err := l.Append(b, 0)
		if err != nil || info.Duplicate {
			t.Fatalf("append: %+v, %v", info, err)
		}
	}
	for range 10 { // the producer's entry and its batch ring exist
		appendNext()
	}
	if allocs := testing.AllocsPerRun(100, appendNext); allocs != 0 {
		t.Errorf("%v allocations per append, want 0", allocs)
	}
}
