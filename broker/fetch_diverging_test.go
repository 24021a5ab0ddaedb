package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchDivergingEpoch: a fetch that sends its last fetched epoch (as
// Kafka 3.9's replica fetcher does) is told where its log diverges from
// the leader's, without records, as Kafka's leader answers: at the end of
// an older epoch it fetched past, and at the log end for a fetcher ahead of
// it in the latest epoch; an epoch the leader cannot place is out of range.
// Served the records instead, a Kafka follower holding a tail the leader
// never had failed its append or kept that tail.
func TestFetchDivergingEpoch(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("fd", 1, nil)
	produceRaw(t, tb, "fd", 0, -1, rawBatch(t, 4, 10, nil), nil)
	e0 := tb.leaderOf("fd", 0).FetchState().LeaderEpoch
	tb.restart() // a new leader epoch, starting at offset 4
	e1 := tb.leaderOf("fd", 0).FetchState().LeaderEpoch
	if e1 <= e0 {
		t.Fatalf("leader epoch %d after the restart, want above %d", e1, e0)
	}
	produceRaw(t, tb, "fd", 0, -1, rawBatch(t, 4, 10, nil), nil) // offsets 4-7
	c := dialProbe(t, tb.addr)
	fetch := func(offset int64, lastEpoch int32) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := sessionFetch(12, 0, -1, "fd", map[int32]int64{0: offset})
		req.Topics[0].Partitions[0].LastFetchedEpoch = lastEpoch
		resp := c.roundTrip(req).(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch at %d, last epoch %d: %+v", offset, lastEpoch, resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	for _, c := range []struct {
		name      string
		offset    int64
		lastEpoch int32
		code      int16
		epoch     int32
		end       int64
	}{
		{"past the end of an older epoch", 6, e0, 0, e0, 4},
		{"ahead of the log end in the latest epoch", 9, e1, 0, e1, 8},
		{"an epoch the leader never had", 2, e1 + 5, kerr.OffsetOutOfRange.Code, -1, -1},
	} {
		p := fetch(c.offset, c.lastEpoch)
		if p.ErrorCode != c.code || p.DivergingEpoch.Epoch != c.epoch || p.DivergingEpoch.EndOffset != c.end || len(p.RecordBatches) != 0 {
			t.Errorf("%s (offset %d, last epoch %d): error %d, diverging epoch %d end %d, %d bytes of records; want error %d, diverging epoch %d end %d, no records",
				c.name, c.offset, c.lastEpoch, p.ErrorCode, p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset, len(p.RecordBatches), c.code, c.epoch, c.end)
		}
	}
	// Within the leader's log, the same epochs read as usual.
	if p := fetch(6, e1); p.ErrorCode != 0 || p.DivergingEpoch.Epoch != -1 || len(p.RecordBatches) == 0 {
		t.Errorf("fetch at 6 in epoch %d: error %d, diverging epoch %d, %d bytes; want its records", e1, p.ErrorCode, p.DivergingEpoch.Epoch, len(p.RecordBatches))
	}
	if p := fetch(2, e0); p.ErrorCode != 0 || p.DivergingEpoch.Epoch != -1 || len(p.RecordBatches) == 0 {
		t.Errorf("fetch at 2 in epoch %d: error %d, diverging epoch %d, %d bytes; want its records", e0, p.ErrorCode, p.DivergingEpoch.Epoch, len(p.RecordBatches))
	}
}
