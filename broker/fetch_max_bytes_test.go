package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetch.max.bytes caps a fetch response below the request's max_bytes (the
// first batch still goes out whole), as Kafka's KafkaApis takes the lesser.
func TestFetchMaxBytesConfig(t *testing.T) {
	tb := startBroker(t, map[string]string{"fetch.max.bytes": "1024"})
	tb.createTopic("fmb", 1, nil)
	b := rawBatch(t, 1, 700, nil)
	for range 4 {
		if r := produceRaw(t, tb, "fmb", 0, -1, b, nil); r.ErrorCode != 0 {
			t.Fatalf("produce: %+v", r)
		}
	}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "fmb"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := tb.roundTrip(req).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("fetch error %d", p.ErrorCode)
	}
	if got := len(p.RecordBatches); got != len(b) {
		t.Errorf("fetch returned %d bytes of records, want the one %d-byte batch that fits fetch.max.bytes=1024 or exceeds it alone", got, len(b))
	}
}
