package broker

// Fetch, key 1, versions 4-17.
//
// v4 adds isolation_level and last_stable_offset, v5 log_start_offset, v7
// sessions (KIP-227), v9 current_leader_epoch (FENCED_LEADER_EPOCH /
// UNKNOWN_LEADER_EPOCH), v10 allows zstd (older versions get
// UNSUPPORTED_COMPRESSION_TYPE for a partition holding zstd batches), v11
// rack and preferred read replica, v12 is flexible, v13 addresses topics by
// id (UNKNOWN_TOPIC_ID), v15 moves replica_id into replica_state, v17 adds
// the follower's replica_directory_id (KIP-853; Brook does not read it).
// Kafka 3.9's replica fetcher sends v17 whatever ApiVersions says.
//
// Sessions (KIP-227, fetch_sessions.go): a full fetch at epoch 0 may get
// a session id; incremental fetches in it then list only the partitions
// that changed and are answered with only those that have something new
// (records, high watermark, log start offset, an error). A session error
// (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
// FETCH_SESSION_TOPIC_ID_ERROR) is answered without partitions.
//
// Sizes follow Kafka: each partition gets at most partition_max_bytes and
// what remains of max_bytes, except that the first partition with data
// returns at least one whole batch even when it is larger. Reads stop at the
// high watermark (read_uncommitted) or the last stable offset
// (read_committed), where the response also lists the aborted
// transactions overlapping the records returned, from the .txnindex files.
// When less than min_bytes is ready the request waits, up to max_wait_ms
// (at most maxFetchWait, 30 s), until an append advances the high
// watermark of one of its partitions, then reads again. The wait ends as
// soon as the connection does.
//
// A fetch with a replica id (replica_id up to v14, replica_state.replica_id
// from v15) comes from a follower: it reads up to the log end offset, not
// the high watermark, and its fetch offset is recorded as the follower's
// log end offset before reading, which may advance the high watermark and
// grow the ISR; each of its partitions is answered by
// replica.Manager.ReadForFollower (replica/leader_fetch.go), which the
// simulation runs too. Its long poll is woken by appends, as consumers'
// are by the high watermark.
//
// Follower fetching (KIP-392): a consumer fetch from v11 on may read from
// a follower, up to the follower's high watermark (beyond its log end it
// gets OFFSET_OUT_OF_RANGE and goes back to the leader, as Kafka's
// consumers do). With replica.selector.class set, the leader answers a
// consumer that sends its rack with a preferred_read_replica and no
// records when a caught-up ISR follower in that rack can serve it
// (read_replica.go), and answers at once.

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/protocol/batch"
	"github.com/brook-mq/brook/replica"
)

const readCommitted = 1

// fetchTarget is one requested partition, resolved once per request.
type fetchTarget struct {
	resp *kmsg.FetchResponseTopicPartition
	req  kmsg.FetchRequestTopicPartition
	part *replica.Partition // nil when the partition errored
	// region is where the partition's records are in its segment file;
	// the connection's writer sends it with sendfile.
	region *log.Slice
	// state is the partition's FetchState as the last read began, and
	// atBound whether that read was at its read bound (nothing to read):
	// what makes a partition quiet in a session (fetch_session_quiet.go).
	state   replica.FetchState
	atBound bool
}

func (b *Broker) handleFetch(ctx context.Context, r *request, req *kmsg.FetchRequest) (reply, error) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	sel := b.readReplicaSelector(r, req)
	sess := b.openFetchSession(r, req, sel)
	if sess.ctx.kind == fetchSessionError {
		resp.ErrorCode = sess.ctx.errorCode
		return respond(resp)
	}
	req = sess.req // an incremental fetch reads its session's partitions but the quiet ones
	regions := make([][]log.Slice, 0, len(req.Topics))
	targets := b.resolveFetchTopics(r, req, req.Topics, resp, &regions, nil)
	wake := make(chan struct{}, 1)
	var unwatch []func()
	follower := fetchReplicaID(req) >= 0
	// Watches are set before the first read, so that an append between
	// the read and the wait is not missed; a fetch that cannot wait needs none.
	for _, t := range targets {
		switch {
		case t.part == nil || req.MaxWaitMillis <= 0:
		case follower:
			unwatch = append(unwatch, t.part.WatchAppends(wake))
		default:
			unwatch = append(unwatch, t.part.Watch(wake))
		}
	}
	stopWatching := func() {
		for _, u := range unwatch {
			u()
		}
		unwatchQuiet(sess.watched, follower, wake)
	}
	maxBytes := b.fetchMaxBytes(r, req)
	// finish runs once the last read, which is what is sent, is done;
	// busy is the handling time (the wait is not counted, the last read
	// is). A throttled answer is empty and leaves the session as it was,
	// as Kafka's getThrottledResponse.
	finish := func(busy time.Duration) (*kmsg.FetchResponse, time.Duration) {
		stopWatching()
		b.recordLeaderThrottle(req, targets)
		b.peekFetchSession(&sess, targets, !follower && b.fetchQuota.Enabled())
		throttle := b.throttleFetch(r, req, resp, regions, targets, sess.sent(), busy)
		b.countFetched(follower, targets)
		b.finishFetchSession(&sess, follower, resp, regions, throttle > 0)
		return resp, throttle
	}
	n, errored := b.readFetch(req, targets, sel, maxBytes)
	ready := func() bool {
		return n >= int(req.MinBytes) || req.MaxWaitMillis <= 0 || errored || len(unwatch) == 0 && len(sess.watched) == 0 && len(sess.quiet) == 0
	}
	if !ready() && len(sess.quiet) > 0 {
		// The quiet partitions the session skipped are watched too, then
		// looked at again: one that changed since the session's check,
		// before its watch, is read now.
		sess.watched = sess.quiet
		watchQuiet(sess.watched, follower, wake)
		if b.promoteQuiet(r, &sess, resp, &regions, &targets) {
			n, errored = b.readFetch(req, targets, sel, maxBytes)
		}
	}
	if ready() {
		resp, throttle := finish(time.Since(r.start))
		return reply{resp: resp, fetchRegions: regions, throttle: throttle, ownQuota: true}, nil
	}
	maxWait := fetchWait(req.MaxWaitMillis)
	busy := time.Since(r.start)
	return reply{
		wait: func() kmsg.Response {
			timer := time.NewTimer(maxWait)
			defer timer.Stop()
			for {
				last := false
				select {
				case <-wake:
				case <-timer.C:
					last = true
				case <-ctx.Done():
					last = true
				}
				start := time.Now()
				b.promoteQuiet(r, &sess, resp, &regions, &targets)
				if n, errored := b.readFetch(req, targets, sel, maxBytes); last || n >= int(req.MinBytes) || errored {
					resp, _ := finish(busy + time.Since(start))
					return resp
				}
			}
		},
		fetchRegions: regions,
		waitRegions:  &regions,
		ownQuota:     true,
	}, nil
}

// countFetched counts the bytes a fetch sends, per topic, once its last
// read is done; a partition that failed after it was found counts as a
// failed fetch, as Kafka's FailedFetchRequestsPerSec.
func (b *Broker) countFetched(follower bool, targets []fetchTarget) {
	for _, t := range targets {
		if t.part == nil {
			continue
		}
		topic := t.part.TopicPartition().Topic
		if t.resp.ErrorCode != 0 && !follower {
			b.metrics.Topics.FetchFailed(topic)
			continue
		}
		b.metrics.Topics.Fetched(topic, int(t.region.Size), follower)
	}
}

// resolveFetchTopics appends to the response skeleton, regions and
// targets the topics of req (all of its own, or those a long-polling
// incremental fetch adds) and finds each partition's local leader;
// partitions that cannot be read get their error code now.
func (b *Broker) resolveFetchTopics(r *request, req *kmsg.FetchRequest, topics []kmsg.FetchRequestTopic, resp *kmsg.FetchResponse, regions *[][]log.Slice, targets []fetchTarget) []fetchTarget {
	n := 0
	for i := range topics {
		n += len(topics[i].Partitions)
	}
	targets = slices.Grow(targets, n)
	// A replica's fetch needs CLUSTER_ACTION, a consumer's READ on each
	// topic; Kafka answers TOPIC_AUTHORIZATION_FAILED for both.
	follower := fetchReplicaID(req) >= 0
	clusterOK := follower && b.authorizeCluster(r, auth.OpClusterAction)
	resp.Topics = slices.Grow(resp.Topics, len(topics))
	for _, rt := range topics {
		resp.Topics = append(resp.Topics, kmsg.NewFetchResponseTopic())
		st := &resp.Topics[len(resp.Topics)-1]
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name, topicCode := rt.Topic, int16(0)
		if req.Version >= 13 {
			if n, ok := b.meta.topicName(rt.TopicID); ok {
				name = n
			} else {
				topicCode = kerr.UnknownTopicID.Code
			}
		}
		if topicCode == 0 && (follower && !clusterOK || !follower && !b.authorize(r, auth.OpRead, auth.ResourceTopic, name)) {
			topicCode = kerr.TopicAuthorizationFailed.Code
		}
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
		rs := make([]log.Slice, len(rt.Partitions))
		*regions = append(*regions, rs)
		for j, rp := range rt.Partitions {
			t := newFetchTarget(&st.Partitions[j], rp, &rs[j])
			code := topicCode
			if code == 0 && fromFollowerAllowed(req) {
				t.part, code = b.hostedPartition(name, rp.Partition)
			} else if code == 0 {
				t.part, code = b.leaderPartition(name, rp.Partition)
			}
			if code == 0 {
				code = replica.EpochErrorCode(t.part.CheckLeaderEpoch(rp.CurrentLeaderEpoch))
			}
			if code != 0 {
				t.resp.ErrorCode, t.part = code, nil
			}
			targets = append(targets, t)
		}
	}
	return targets
}

// newFetchTarget is rp's target, its answer sp set as before any read.
func newFetchTarget(sp *kmsg.FetchResponseTopicPartition, rp kmsg.FetchRequestTopicPartition, region *log.Slice) fetchTarget {
	*sp = kmsg.NewFetchResponseTopicPartition()
	sp.Partition = rp.Partition
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
	// Kafka sends empty, never null, records; librdkafka rejects a null
	// record set as a protocol error.
	sp.RecordBatches = []byte{}
	return fetchTarget{resp: sp, req: rp, region: region}
}

// readFetch (re)reads every readable partition into the response and
// returns the bytes gathered and whether the fetch must be answered now: a
// partition has an error or names a preferred read replica.
func (b *Broker) readFetch(req *kmsg.FetchRequest, targets []fetchTarget, sel readReplicaSelector, maxBytes int) (int, bool) {
	remaining := maxBytes
	total, errored := 0, false
	b.fetchSessions.partitionsRead.Add(int64(len(targets)))
	replicaID := fetchReplicaID(req)
	if replicaID >= 0 {
		defer b.replicas.HoldISRChanges()()
	}
	for i := range targets {
		t := &targets[i]
		if t.part == nil {
			errored = true
			continue
		}
		sp := t.resp
		sp.ErrorCode, *t.region, sp.AbortedTransactions = 0, log.Slice{}, nil
		sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = -1, -1
		limit := min(int(t.req.PartitionMaxBytes), remaining)
		var slice log.Slice
		var err error
		if replicaID >= 0 {
			var code int16
			if slice, code, err = readForFollower(b.replicas, req, replicaID, t, limit, total == 0); code != 0 {
				sp.ErrorCode, errored = code, true
				continue
			}
		} else {
			t.state = t.part.FetchState()
			hw, lso := t.state.HighWatermark, t.state.LastStable
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = hw, lso, t.state.LogStart
			// Kafka skips the read when it names another replica.
			if sp.PreferredReadReplica = sel.preferred(t.part, t.req.FetchOffset); sp.PreferredReadReplica >= 0 {
				errored = true
				continue
			}
			// A fetcher whose log diverged is told where, and not read
			// (replica/diverging.go); Kafka answers it at once.
			if d := t.part.Divergence(lastFetchedEpoch(req, t), t.req.FetchOffset, t.state.LogStart); d.OutOfRange || d.Diverged {
				sp.ErrorCode, errored = divergenceAnswer(sp, d), true
				continue
			}
			if t.req.FetchOffset < sp.LogStartOffset || t.req.FetchOffset > t.state.LogEnd {
				sp.ErrorCode, errored = kerr.OffsetOutOfRange.Code, true
				continue
			}
			bound := hw
			if req.IsolationLevel == readCommitted {
				bound = lso
			}
			t.atBound = t.req.FetchOffset == bound
			if limit <= 0 && total > 0 {
				continue
			}
			slice, err = t.part.Log().Read(t.req.FetchOffset, int32(max(limit, 0)), bound, total == 0)
		}
		if err != nil {
			sp.ErrorCode, errored = appendErrorCode(err), true
			continue
		}
		if slice.Size == 0 {
			continue
		}
		if req.Version < 10 {
			zstd, err := regionHasZstd(slice)
			if err != nil {
				b.logger.Error("read fetch batch headers", "partition", t.part.TopicPartition(), "err", err)
				sp.ErrorCode, errored = kerr.KafkaStorageError.Code, true
				continue
			}
			if zstd {
				sp.ErrorCode, errored = kerr.UnsupportedCompressionType.Code, true
				continue
			}
		}
		*t.region = slice
		if req.IsolationLevel == readCommitted && replicaID < 0 {
			sp.AbortedTransactions = abortedTransactions(t.part.Log().AbortedTransactions(t.req.FetchOffset, slice.LastOffset+1))
		}
		total += int(slice.Size)
		remaining -= int(slice.Size)
	}
	return total, errored
}

// abortedTransactions lists, for a read_committed consumer, the aborted
// transactions overlapping the records returned, by producer id and first
// offset: the consumer drops their records up to each producer's ABORT
// marker. The list is empty, not null, when there are none, as Kafka sends.
func abortedTransactions(txns []log.AbortedTxn) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(txns))
	for i, a := range txns {
		out[i] = kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		out[i].ProducerID, out[i].FirstOffset = a.ProducerID, a.FirstOffset
	}
	return out
}

// fetchReplicaID is the fetching follower's broker id, or -1 for a consumer.
func fetchReplicaID(req *kmsg.FetchRequest) int32 {
	if req.Version >= 15 {
		return req.ReplicaState.ID
	}
	return req.ReplicaID
}

// fetchReplicaEpoch is the fetching follower's broker epoch (Fetch v15+
// replica_state.replica_epoch), -1 before v15 or when not sent; the
// leader names the follower with it in the ISR changes it proposes.
func fetchReplicaEpoch(req *kmsg.FetchRequest) int64 {
	if req.Version >= 15 {
		return req.ReplicaState.Epoch
	}
	return -1
}

// regionHasZstd reports whether any batch in the region is zstd-compressed;
// Fetch below v10 must not carry them. It reads only the batch headers.
func regionHasZstd(s log.Slice) (bool, error) {
	var hdr [batch.HeaderSize]byte
	for pos, end := s.Pos, s.Pos+int64(s.Size); pos+batch.HeaderSize <= end; {
		if _, err := s.File.ReadAt(hdr[:], pos); err != nil {
			return false, err
		}
		h, err := batch.ParseHeader(hdr[:])
		if err != nil {
			return false, err
		}
		if h.Compression() == batch.Zstd {
			return true, nil
		}
		pos += int64(h.Size())
	}
	return false, nil
}

// maxFetchWait caps max_wait_ms: a parked fetch holds its connection's
// in-flight place and its partition watches, so the wait is bounded
// whatever a client asks. Clients wait 500 ms by default (replicas
// replica.fetch.wait.max.ms); one that asks for more gets an empty answer
// after maxFetchWait and fetches again.
const maxFetchWait = 30 * time.Second

// fetchWait is how long a fetch asking for max_wait_ms may wait.
func fetchWait(maxWaitMs int32) time.Duration {
	return min(time.Duration(maxWaitMs)*time.Millisecond, maxFetchWait)
}
