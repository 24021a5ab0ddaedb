package log

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/brook-mq/brook/protocol/batch"
)

// TestAppendTimestampBounds drives message.timestamp.{before,after}.max.ms
// with an injected clock, at the edges of the window: a bound is inclusive,
// one millisecond past it fails with INVALID_TIMESTAMP naming the record,
// and LogAppendTime topics do not check.
func TestAppendTimestampBounds(t *testing.T) {
	clock := newManualClock()
	now := clock.Now().UnixMilli()
	cfg := DefaultConfig()
	cfg.TimestampBeforeMaxMs, cfg.TimestampAfterMaxMs = 60_000, 1_000
	l := openTestLog(t, filepath.Join(t.TempDir(), "t-0"), cfg, clock, Options{})
	defer l.Close()
	for _, tc := range []struct {
		ts int64
		ok bool
	}{{now - 60_000, true}, {now - 60_001, false}, {now + 1_000, true}, {now + 1_001, false}, {-1, true}} {
		_, err := l.Append(buildBatch(plainSpec(tc.ts), nRecords(1, 5)), 0)
		if tc.ok != (err == nil) {
			t.Fatalf("timestamp now%+d: err %v, want ok %v", tc.ts-now, err, tc.ok)
		}
		var re *batch.RecordErrors
		if !tc.ok && (!errors.Is(err, batch.ErrInvalidTimestamp) || !errors.As(err, &re) || re.Records[0].BatchIndex != 0) {
			t.Fatalf("timestamp now%+d: err %v, want INVALID_TIMESTAMP for record 0", tc.ts-now, err)
		}
	}
	cfg.LogAppendTime = true
	la := openTestLog(t, filepath.Join(t.TempDir(), "t-1"), cfg, clock, Options{})
	defer la.Close()
	if _, err := la.Append(buildBatch(plainSpec(1000), nRecords(1, 5)), 0); err != nil {
		t.Fatalf("LogAppendTime topic checked a timestamp: %v", err)
	}
}
