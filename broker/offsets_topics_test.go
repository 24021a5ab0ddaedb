package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// simpleCommit commits offset 3 for each (topic, partition) as a simple
// consumer (generation -1) and returns the codes by topic and partition.
func simpleCommit(t *testing.T, tb *testBroker, group string, parts map[string][]int32) map[string]map[int32]int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(8)
	req.Group, req.Generation = group, -1
	for topic, ps := range parts {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		for _, p := range ps {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, 3
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp := tb.roundTrip(req).(*kmsg.OffsetCommitResponse)
	out := map[string]map[int32]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if out[rt.Topic] == nil {
				out[rt.Topic] = map[int32]int16{}
			}
			out[rt.Topic][rp.Partition] = rp.ErrorCode
		}
	}
	return out
}

func TestOffsetCommitUnknownPartitionsAndDeletedTopics(t *testing.T) {
	tb := startBroker(t, nil)
	tb.createTopic("t", 1, nil)
	readyCoordinator(t, tb, "g")
	codes := simpleCommit(t, tb, "g", map[string][]int32{"t": {0, 9}, "nope": {0}})
	wantCode(t, "commit t-0", codes["t"][0], &kerr.Error{Code: 0, Message: "NONE"})
	wantCode(t, "commit t-9", codes["t"][9], kerr.UnknownTopicOrPartition)
	wantCode(t, "commit nope-0", codes["nope"][0], kerr.UnknownTopicOrPartition)
	code, got := offsetFetchRaw(t, tb, 8, "g", 0)
	if code != 0 || len(got) != 1 || got[0].Offset != 3 {
		t.Fatalf("offsets before the delete: code %d, %+v; want only t-0 at 3", code, got)
	}

	// Deleting the topic drops the group's offsets for it, as in Kafka.
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(5)
	del.TopicNames, del.TimeoutMillis = []string{"t"}, 10000
	if r := tb.roundTrip(del).(*kmsg.DeleteTopicsResponse); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete topic: %+v", r.Topics[0])
	}
	deadline := testContext(t)
	for {
		if _, got := offsetFetchRaw(t, tb, 8, "g", 0); len(got) == 0 {
			break
		}
		if deadline.Err() != nil {
			t.Fatalf("offsets of the deleted topic are still there")
		}
	}
}
