package replica

// Truncation on fetch (KIP-595's fetch path, used by Kafka's replica
// fetchers since inter.broker.protocol.version 2.7): a Fetch from v12 on
// carries, per partition, the epoch of the last batch the fetcher holds
// (last_fetched_epoch). A Kafka follower fetches at its log end offset
// right after it starts following, without OffsetForLeaderEpoch first,
// and relies on the leader to answer a diverging_epoch when its log's
// tail is not the leader's (records it appended as a leader that no
// follower copied): it truncates there, then fetches again. A leader that
// ignored the field served it the batches covering its fetch offset; when
// a batch began below the follower's log end, the follower's append failed
// (UnexpectedAppendOffsetException), its fetcher dropped the partition and
// the follower stayed out of the ISR (tests/interop TestMixedMembership,
// intermittently, after kill -9 of a Kafka leader Brook took over from);
// when the boundaries matched, the divergent records stayed in its log.
// Kafka's leader does the check in Partition.readRecords, for any fetch
// that carries the epoch.

// Divergence is what a fetch's last fetched epoch tells the leader.
type Divergence struct {
	// OutOfRange: the epoch's end is unknown here, or the fetch offset is
	// below the log start: the answer is OFFSET_OUT_OF_RANGE.
	OutOfRange bool
	// Diverged: the fetcher's log is not the leader's past EndOffset of
	// Epoch (the leader's largest epoch up to the fetcher's): the answer
	// carries them as diverging_epoch and no records, and the fetch is
	// not recorded as the follower's position.
	Diverged  bool
	Epoch     int32
	EndOffset int64
}

// Divergence checks a fetch at fetchOffset whose last fetched batch was of
// lastFetchedEpoch (-1: not sent, nothing to check) against the leader's
// epoch cache; logStart is the log start offset the fetch's read uses.
func (p *Partition) Divergence(lastFetchedEpoch int32, fetchOffset, logStart int64) Divergence {
	if lastFetchedEpoch < 0 {
		return Divergence{}
	}
	return divergence(lastFetchedEpoch, fetchOffset, logStart, p.log.EndOffsetForEpoch)
}

// divergence is Divergence's rule, as Kafka's readRecords: an epoch whose
// end the cache cannot tell, then a fetch offset below the log start, are
// out of range; a fetcher whose epoch the leader never wrote, or whose
// fetch offset is past the end of that epoch here, has diverged.
func divergence(lastFetchedEpoch int32, fetchOffset, logStart int64, endOffsetForEpoch func(int32) (int32, int64)) Divergence {
	epoch, end := endOffsetForEpoch(lastFetchedEpoch)
	if epoch < 0 || end < 0 || fetchOffset < logStart {
		return Divergence{OutOfRange: true}
	}
	if epoch < lastFetchedEpoch || end < fetchOffset {
		return Divergence{Diverged: true, Epoch: epoch, EndOffset: end}
	}
	return Divergence{}
}
