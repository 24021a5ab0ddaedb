package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
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

// readForFollower answers target t of follower replicaID's fetch req with
// replica.ReadForFollower, for readFetch and FollowerFetches alike: t's
// answer gets the partition's offsets, and the records read are returned,
// or the code to answer with (a divergence, out of range, not the
// leader), or the read's error. limit bounds the read; first: no earlier
// partition of the answer has records.
func readForFollower(m *replica.Manager, req *kmsg.FetchRequest, replicaID int32, t *fetchTarget, limit int, first bool) (log.Slice, int16, error) {
	fr := m.ReadForFollower(t.part, replica.FollowerFetch{
		ReplicaID: replicaID, BrokerEpoch: fetchReplicaEpoch(req), CurrentLeaderEpoch: t.req.CurrentLeaderEpoch, FetchOffset: t.req.FetchOffset,
		LogStartOffset: t.req.LogStartOffset, LastFetchedEpoch: lastFetchedEpoch(req, t),
		MaxBytes: int32(limit), First: first,
	})
	sp := t.resp
	t.state, t.atBound = fr.State, fr.AtBound
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = fr.HighWatermark, fr.LastStable, fr.State.LogStart
	if d := fr.Divergence; d.OutOfRange || d.Diverged {
		return log.Slice{}, divergenceAnswer(sp, d), nil
	}
	if fr.ErrorCode != 0 {
		return log.Slice{}, fr.ErrorCode, nil
	}
	return fr.Records, 0, fr.Err
}
