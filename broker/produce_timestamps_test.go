package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestProduceTimestampBounds: message.timestamp.{before,after}.max.ms and
// the deprecated difference, at topic and broker level, reach the log; a
// record outside them fails the batch with INVALID_TIMESTAMP naming each
// record. The timestamps are decades off the broker's clock, so the
// outcome does not depend on when the test runs.
func TestProduceTimestampBounds(t *testing.T) {
	tb := startBroker(t, map[string]string{"log.message.timestamp.before.max.ms": "60000"})
	minute, maxLong := "60000", "9223372036854775807"
	logAppend := "LogAppendTime"
	tb.createTopic("ts-broker", 1, nil)
	tb.createTopic("ts-after", 1, map[string]*string{"message.timestamp.after.max.ms": &minute})
	tb.createTopic("ts-diff", 1, map[string]*string{"message.timestamp.before.max.ms": &maxLong, "message.timestamp.difference.max.ms": &minute})
	tb.createTopic("ts-loose", 1, map[string]*string{"message.timestamp.before.max.ms": &maxLong})
	tb.createTopic("ts-append", 1, map[string]*string{"message.timestamp.type": &logAppend})

	year1970 := int64(1000)
	year2200 := time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	all := []int32{0, 1, 2}
	wantRecordErrors(t, "1970, broker before.max.ms", tb, "ts-broker", stampedBatch(t, 3, year1970), kerr.InvalidTimestamp, all)
	wantRecordErrors(t, "2200, topic after.max.ms", tb, "ts-after", stampedBatch(t, 3, year2200), kerr.InvalidTimestamp, all)
	wantRecordErrors(t, "1970, topic difference.max.ms", tb, "ts-diff", stampedBatch(t, 3, year1970), kerr.InvalidTimestamp, all)
	// A timestamp failure outranks a missing key in the partition's code.
	compact := "compact"
	tb.createTopic("ts-compact", 1, map[string]*string{"cleanup.policy": &compact})
	wantRecordErrors(t, "1970 and keyless", tb, "ts-compact", stampedBatch(t, 3, year1970, 1), kerr.InvalidTimestamp, all)

	for _, topic := range []string{"ts-loose", "ts-append", "ts-after"} {
		ts := year1970
		if topic == "ts-after" {
			ts = time.Now().UnixMilli() // within the broker's minute
		}
		if sp := produceRaw(t, tb, topic, 0, 1, stampedBatch(t, 3, ts), nil); sp.ErrorCode != 0 || sp.BaseOffset != 0 {
			t.Errorf("%s: code %d (%v) offset %d, want accepted at 0", topic, sp.ErrorCode, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
		}
	}
}
