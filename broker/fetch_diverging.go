package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/replica"
)

// lastFetchedEpoch is target t's last fetched epoch (Fetch v12+), -1
// (nothing to check) before: Kafka's readRecords checks it for every fetch
// that sends one (replica/diverging.go).
func lastFetchedEpoch(req *kmsg.FetchRequest, t *fetchTarget) int32 {
	if req.Version < 12 {
		return -1
	}
	return t.req.LastFetchedEpoch
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
