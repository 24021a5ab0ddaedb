package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/protocol/batch"
)

// stampedBatch builds n keyed records stamped ts, with the keys of the
// records at the indexes in keyless left null.
func stampedBatch(t *testing.T, n int, ts int64, keyless ...int) []byte {
	t.Helper()
	recs := make([]batch.Record, n)
	for i := range recs {
		recs[i] = batch.Record{OffsetDelta: int32(i), Key: []byte("k"), Value: []byte("v")}
		if slices.Contains(keyless, i) {
			recs[i].Key = nil
		}
	}
	b, err := batch.Build(batch.BuildOptions{PartitionLeaderEpoch: -1, BaseTimestamp: ts}, recs, batch.MustCodecs())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantRecordErrors checks a rejected partition: code, a top-level message
// and exactly the failing record indexes, each with a message.
func wantRecordErrors(t *testing.T, what string, tb *testBroker, topic string, records []byte, code *kerr.Error, indexes []int32) {
	t.Helper()
	sp := produceRaw(t, tb, topic, 0, 1, records, nil)
	wantCode(t, what, sp.ErrorCode, code)
	if sp.ErrorMessage == nil || *sp.ErrorMessage == "" {
		t.Errorf("%s: no error message", what)
	}
	var got []int32
	for _, re := range sp.ErrorRecords {
		got = append(got, re.RelativeOffset)
		if re.ErrorMessage == nil || *re.ErrorMessage == "" {
			t.Errorf("%s: record %d has no error message", what, re.RelativeOffset)
		}
	}
	if !slices.Equal(got, indexes) {
		t.Fatalf("%s: record_errors at %v, want %v", what, got, indexes)
	}
}

// TestProduceRecordErrorsListFailingRecords: Kafka's LogValidator rejects
// the batch and names each failing record (KIP-467), so that a client can
// fail only those.
func TestProduceRecordErrorsListFailingRecords(t *testing.T) {
	tb := startBroker(t, nil)
	compact := "compact"
	tb.createTopic("compacted", 1, map[string]*string{"cleanup.policy": &compact})
	var keyless []int
	var want []int32
	for i := 3; i < 100; i += 10 {
		keyless = append(keyless, i)
		want = append(want, int32(i))
	}
	now := time.Now().UnixMilli()
	wantRecordErrors(t, "10 keyless of 100", tb, "compacted", stampedBatch(t, 100, now, keyless...), kerr.InvalidRecord, want)
	ok := produceRaw(t, tb, "compacted", 0, 1, stampedBatch(t, 100, now), nil)
	if ok.ErrorCode != 0 || ok.BaseOffset != 0 {
		t.Fatalf("keyed batch after the rejected one: code %d offset %d, want 0 at 0", ok.ErrorCode, ok.BaseOffset)
	}
}
