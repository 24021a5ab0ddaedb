package broker

// The driver of fetch sessions (KIP-227) for the Fetch handler: it holds
// the cache's lock, reads the clock, and translates between kmsg and the
// pure core (fetch_session.go, fetch_session_cache.go).
//
// A fetch opens its session before reading: a full fetch reads the
// partitions it lists, an incremental one all of its session's (with the
// parameters the request updated), through a request rewritten to list
// them. Once the last read is done (after any long poll), a full fetch may
// create a session of what it read, and an incremental response keeps
// only the partitions the session says to send.

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/log"
)

// fetchSessions is the broker's session cache behind its lock. Fetches of
// every connection share it; each holds the lock only to open or finish.
type fetchSessions struct {
	mu    sync.Mutex
	cache *fetchSessionCache
	// partitionsRead counts the partitions fetches read (readFetch), which
	// tests of incremental fetches count.
	partitionsRead atomic.Int64
}

func newFetchSessions(maxSlots int) *fetchSessions {
	return &fetchSessions{cache: newFetchSessionCache(maxSlots, func() int32 {
		return rand.Int32N(math.MaxInt32) + 1
	})}
}

// fetchSessionState is one fetch's session, from open to finish.
type fetchSessionState struct {
	ctx fetchContext
	// parts are the partitions read, in the order of the targets: the
	// request's for a full fetch, the session's for an incremental one.
	parts []fetchSessionPartition
	// req is the request to read: the one received, or for an
	// incremental fetch one that lists the session's partitions.
	req *kmsg.FetchRequest
	// results are what the last read tells the fetcher, in the order of
	// parts (peekFetchSession).
	results []fetchSessionResult
	// qc is the fetch's quiet context; quiet, for an incremental fetch
	// that may long-poll, the quiet partitions it skipped
	// (fetch_session_quiet.go), in the session's buffer, which finish
	// gives back. watched is quiet as the fetch began to watch it
	// (watchQuiet), what it must unwatch; promoteQuiet takes partitions
	// out of quiet but keeps them in the array.
	qc      quietContext
	quiet   []quietRef
	watched []quietRef
}

// sent is, for an incremental fetch, which partitions its answer carries
// (in the order of the response's); nil when it carries all it read.
func (st *fetchSessionState) sent() []fetchSessionResult {
	if st.ctx.kind != fetchIncremental {
		return nil
	}
	return st.results
}

func (b *Broker) fetchSessionNowMs() int64 { return b.fetchSessionNow().UnixMilli() }

// openFetchSession decides how req is served (fetchContext); a session
// error is answered without reading. An incremental fetch reads its
// session's partitions but the quiet ones.
func (b *Broker) openFetchSession(r *request, req *kmsg.FetchRequest, sel readReplicaSelector) fetchSessionState {
	if req.Version < 7 {
		return fetchSessionState{req: req}
	}
	qc := b.quietContext(req, sel)
	return b.fetchSessions.open(b.fetchSessionNowMs(), req, qc, func(s *fetchSession) ([]fetchSessionPartition, []quietRef) {
		return b.sessionReads(r, s, qc, req.MaxWaitMillis > 0)
	})
}

// open is openFetchSession at nowMs, in the quiet context qc, without a
// Broker: reads splits an incremental fetch's session into the
// partitions to read and the quiet ones (sessionReads), under fs.mu.
func (fs *fetchSessions) open(nowMs int64, req *kmsg.FetchRequest, qc quietContext, reads func(*fetchSession) ([]fetchSessionPartition, []quietRef)) fetchSessionState {
	st := fetchSessionState{req: req}
	if req.Version < 7 {
		return st
	}
	st.qc = qc
	var reqParts []fetchSessionPartition
	var forgotten []fetchSessionKey
	incremental := req.SessionEpoch != fetchSessionInitialEpoch && req.SessionEpoch != fetchSessionFinalEpoch
	if incremental {
		reqParts = requestSessionPartitions(req)
		forgotten = forgottenSessionKeys(req)
	}
	fs.mu.Lock()
	st.ctx = fs.cache.newContext(nowMs, req.SessionID, req.SessionEpoch, req.Version, reqParts, forgotten)
	if st.ctx.kind == fetchIncremental {
		st.parts, st.quiet = reads(st.ctx.session)
	}
	fs.mu.Unlock()
	switch st.ctx.kind {
	case fetchFull:
		st.parts = requestSessionPartitions(req)
	case fetchIncremental:
		st.req = sessionFetchRequest(req, st.parts)
	}
	return st
}

// peekFetchSession takes what the last read of targets (in the order of
// st.parts) tells the fetcher and, for an incremental fetch whose answer's
// size is wanted (sized: a consumer_byte_rate applies), marks which
// partitions the answer would carry, changing nothing: a throttled answer
// must leave the session as it was. Without sized the session's lock is
// not taken a second time; finishFetchSession marks them.
func (b *Broker) peekFetchSession(st *fetchSessionState, targets []fetchTarget, sized bool) {
	b.fetchSessions.peek(st, targets, sized)
}

// peek is peekFetchSession without a Broker.
func (fs *fetchSessions) peek(st *fetchSessionState, targets []fetchTarget, sized bool) {
	if st.ctx.kind != fetchFull && st.ctx.kind != fetchIncremental {
		return
	}
	st.results = fetchSessionResults(targets)
	if sized && st.ctx.kind == fetchIncremental {
		fs.mu.Lock()
		st.ctx.session.peek(st.parts, st.results)
		fs.mu.Unlock()
	}
}

// finishFetchSession ends a fetch's session once its last read is done
// and peekFetchSession has run. It must run after everything else that
// reads targets: it compacts the response in place. A throttled answer is
// empty and changes no session, as Kafka's getThrottledResponse: a full
// fetch gets no session, an incremental one keeps its session id.
func (b *Broker) finishFetchSession(st *fetchSessionState, follower bool, resp *kmsg.FetchResponse, regions [][]log.Slice, throttled bool) {
	b.fetchSessions.finish(b.fetchSessionNowMs(), st, follower, resp, regions, throttled)
}

// finish is finishFetchSession at nowMs without a Broker.
func (fs *fetchSessions) finish(nowMs int64, st *fetchSessionState, follower bool, resp *kmsg.FetchResponse, regions [][]log.Slice, throttled bool) {
	if st.ctx.kind != fetchFull && st.ctx.kind != fetchIncremental {
		return
	}
	if throttled {
		if st.ctx.kind == fetchIncremental {
			resp.SessionID = st.ctx.session.id
		}
		return
	}
	results := st.results
	fs.mu.Lock()
	var code int16
	if st.ctx.kind == fetchFull {
		resp.SessionID = fs.cache.createSession(nowMs, follower, st.req.Version, st.parts, results, st.qc)
	} else {
		code = st.ctx.session.respond(st.ctx.reqEpoch, st.parts, results, st.qc)
		resp.SessionID = st.ctx.session.id
		st.ctx.session.giveQuietBuf(st.quiet)
		st.quiet, st.watched = nil, nil
	}
	fs.mu.Unlock()
	switch {
	case code != 0:
		resp.ErrorCode, resp.Topics = code, resp.Topics[:0]
	case st.ctx.kind == fetchIncremental:
		pruneFetchResponse(resp, regions, results)
	}
}

// sessionKey is a request partition's key: by topic id from v13 on.
func sessionKey(version int16, topic string, topicID [16]byte, partition int32) fetchSessionKey {
	if version >= 13 {
		return fetchSessionKey{topicID: topicID, partition: partition}
	}
	return fetchSessionKey{topic: topic, partition: partition}
}

func requestSessionPartitions(req *kmsg.FetchRequest) []fetchSessionPartition {
	n := 0
	for i := range req.Topics {
		n += len(req.Topics[i].Partitions)
	}
	parts := make([]fetchSessionPartition, 0, n)
	for i := range req.Topics {
		rt := &req.Topics[i]
		for _, rp := range rt.Partitions {
			parts = append(parts, fetchSessionPartition{
				key: sessionKey(req.Version, rt.Topic, rt.TopicID, rp.Partition),
				params: fetchSessionParams{
					fetchOffset: rp.FetchOffset, logStartOffset: rp.LogStartOffset, maxBytes: rp.PartitionMaxBytes,
					currentLeaderEpoch: rp.CurrentLeaderEpoch, lastFetchedEpoch: rp.LastFetchedEpoch,
				},
			})
		}
	}
	return parts
}

func forgottenSessionKeys(req *kmsg.FetchRequest) []fetchSessionKey {
	var keys []fetchSessionKey
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			keys = append(keys, sessionKey(req.Version, ft.Topic, ft.TopicID, p))
		}
	}
	return keys
}

// sessionFetchRequest is req listing parts instead of its own partitions:
// consecutive partitions of one topic form one topic entry, so a topic may
// appear more than once once partitions that returned records have moved
// to the end of the session, as in Kafka's responses.
func sessionFetchRequest(req *kmsg.FetchRequest, parts []fetchSessionPartition) *kmsg.FetchRequest {
	sreq := *req
	sreq.Topics, sreq.ForgottenTopics = nil, nil
	all := make([]kmsg.FetchRequestTopicPartition, len(parts))
	start := 0
	for i, p := range parts {
		all[i] = kmsg.FetchRequestTopicPartition{
			Partition: p.key.partition, CurrentLeaderEpoch: p.params.currentLeaderEpoch,
			FetchOffset: p.params.fetchOffset, LastFetchedEpoch: p.params.lastFetchedEpoch,
			LogStartOffset: p.params.logStartOffset, PartitionMaxBytes: p.params.maxBytes,
		}
		if i+1 == len(parts) || parts[i+1].key.topic != p.key.topic || parts[i+1].key.topicID != p.key.topicID {
			sreq.Topics = append(sreq.Topics, kmsg.FetchRequestTopic{Topic: p.key.topic, TopicID: p.key.topicID, Partitions: all[start : i+1 : i+1]})
			start = i + 1
		}
	}
	return &sreq
}

// fetchSessionResults is what each target's last read tells the fetcher.
func fetchSessionResults(targets []fetchTarget) []fetchSessionResult {
	results := make([]fetchSessionResult, len(targets))
	for i, t := range targets {
		sp := t.resp
		results[i] = fetchSessionResult{
			recordsBytes:  int(t.region.Size) + len(sp.RecordBatches),
			highWatermark: sp.HighWatermark, logStartOffset: sp.LogStartOffset, errorCode: sp.ErrorCode,
			mustSend: sp.PreferredReadReplica >= 0 || sp.DivergingEpoch.Epoch >= 0,
			part:     t.part, state: t.state,
		}
		r := &results[i]
		r.quiet = t.part != nil && t.atBound && r.recordsBytes == 0 && r.errorCode == 0 && !r.mustSend
	}
	return results
}

// pruneFetchResponse keeps, in place, the partitions results say to send
// (results in the order of the response's partitions), with their regions,
// and drops topics left empty.
func pruneFetchResponse(resp *kmsg.FetchResponse, regions [][]log.Slice, results []fetchSessionResult) {
	k, nt := 0, 0
	for ti := range resp.Topics {
		t, rs := &resp.Topics[ti], regions[ti]
		np := 0
		for pi := range t.Partitions {
			if results[k].send {
				t.Partitions[np], rs[np] = t.Partitions[pi], rs[pi]
				np++
			}
			k++
		}
		if np == 0 {
			continue
		}
		t.Partitions = t.Partitions[:np]
		resp.Topics[nt], regions[nt] = *t, rs[:np]
		nt++
	}
	resp.Topics = resp.Topics[:nt]
}

// sentFetchResponse is a copy of resp and regions holding only the
// partitions results say to send, leaving resp as it is.
func sentFetchResponse(resp *kmsg.FetchResponse, regions [][]log.Slice, results []fetchSessionResult) (*kmsg.FetchResponse, [][]log.Slice) {
	cp := *resp
	cp.Topics = make([]kmsg.FetchResponseTopic, len(resp.Topics))
	rs := make([][]log.Slice, len(regions))
	for i := range resp.Topics {
		cp.Topics[i] = resp.Topics[i]
		cp.Topics[i].Partitions = slices.Clone(resp.Topics[i].Partitions)
		rs[i] = slices.Clone(regions[i])
	}
	pruneFetchResponse(&cp, rs, results)
	return &cp, rs
}
