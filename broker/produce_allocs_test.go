package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceTopicByIDAllocations: resolving a Produce v13 topic id to its
// name is done for every topic of every request and must not copy the
// topic's metadata.
func TestProduceTopicByIDAllocations(t *testing.T) {
	tb := startBroker(t, nil)
	const topic = "by-id"
	tb.createTopic(topic, 12, nil)
	st, ok := tb.b.meta.topic(topic)
	if !ok {
		t.Fatal("topic not in the metadata cache")
	}
	rt := kmsg.NewProduceRequestTopic()
	rt.TopicID = st.id
	name, code := tb.b.produceTopic(13, rt)
	if name != topic || code != 0 {
		t.Fatalf("produceTopic = %q, %d; want %q, 0", name, code, topic)
	}
	if allocs := testing.AllocsPerRun(100, func() { tb.b.produceTopic(13, rt) }); allocs != 0 {
		t.Errorf("produceTopic by id: %v allocations, want 0", allocs)
	}
}
