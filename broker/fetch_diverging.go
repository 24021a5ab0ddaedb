package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/replica"
)

// fetchDivergence checks target t's last fetched epoch (Fetch v12+) against
// the leader's log, as Kafka's readRecords does for every fetch that sends
// one (replica/diverging.go); t.state is the read's FetchState.
func fetchDivergence(req *kmsg.FetchRequest, t *fetchTarget) replica.Divergence {
	if req.Version < 12 {
		return replica.Divergence{}
	}
	return t.part.Divergence(t.req.LastFetchedEpoch, t.req.FetchOffset, t.state.LogStart)
}

// divergenceAnswer fills sp for a divergence d and returns its error code:
// OFFSET_OUT_OF_RANGE, or none with the diverging epoch set.
func divergenceAnswer(sp *kmsg.FetchResponseTopicPartition, d replica.Divergence) int16 {
	if d.OutOfRange {
		return kerr.OffsetOutOfRange.Code
	}
	sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = d.Epoch, d.EndOffset
	return 0
}
