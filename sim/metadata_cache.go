package sim

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/controller"
)

// A simulated broker keeps the partition states of the UpdateMetadata
// requests it is sent, as the real broker's metadata cache does, so that
// a controller it starts seeds its first load from them
// (controller.Config.CachedStates): the network's delays and losses, and
// a restart's empty cache, make those states out of date the ways a real
// cluster does.

// topicCache is one topic's cached partition states.
type topicCache struct {
	id     [16]byte
	states map[int32]controller.PartitionState
}

// onUpdateMetadata applies an UpdateMetadata request, refused from an
// older controller epoch (broker's controllerFence): states are upserts,
// LeaderDuringDelete removes a partition being deleted, and a new topic id
// replaces the topic.
func (b *Broker) onUpdateMetadata(req *kmsg.UpdateMetadataRequest) {
	if req.ControllerEpoch < b.controllerEpoch {
		return
	}
	b.controllerEpoch = req.ControllerEpoch
	if b.meta == nil {
		b.meta = map[string]*topicCache{}
	}
	for _, ts := range req.TopicStates {
		t := b.meta[ts.Topic]
		for _, ps := range ts.PartitionStates {
			if ps.Leader == controller.LeaderDuringDelete {
				if t != nil {
					delete(t.states, ps.Partition)
				}
				continue
			}
			if t == nil || t.id != ts.TopicID {
				t = &topicCache{id: ts.TopicID, states: map[int32]controller.PartitionState{}}
				b.meta[ts.Topic] = t
			}
			t.states[ps.Partition] = controller.StateFromUpdateMetadata(ps)
		}
		if t != nil && len(t.states) == 0 {
			delete(b.meta, ts.Topic)
		}
	}
}

// cachedStates is controller.Config.CachedStates over the broker's cache.
func (b *Broker) cachedStates(topic string, id [16]byte) map[int32]controller.PartitionState {
	t := b.meta[topic]
	if t == nil || t.id != id {
		return nil
	}
	out := maps.Clone(t.states)
	for p, st := range out {
		st.ISR = slices.Clone(st.ISR)
		out[p] = st
	}
	return out
}
