package broker

// One fetch session (KIP-227), the pure part: the partitions a fetcher
// follows with what it last asked and what it was last told. No lock, no
// clock, no I/O; fetch_session_cache.go holds the sessions and
// fetch_sessions.go is the driver the Fetch handler calls under its lock.
//
// A session's partitions keep an order, as Kafka's ImplicitLinkedHashCollection
// does: an incremental fetch reads them in that order and a partition that
// returned records moves to the end, so that partitions that had data
// last time do not take all of max_bytes again.

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/replica"
)

const (
	// fetchSessionNoID is INVALID_SESSION_ID: no session.
	fetchSessionNoID int32 = 0
	// fetchSessionInitialEpoch asks for a new session with a full fetch.
	fetchSessionInitialEpoch int32 = 0
	// fetchSessionFinalEpoch closes a session (or asks for none): the fetch
	// is full and no session is created.
	fetchSessionFinalEpoch int32 = -1
)

// nextFetchSessionEpoch is the epoch after e (Kafka's FetchMetadata.nextEpoch).
func nextFetchSessionEpoch(e int32) int32 { return replica.NextFetchSessionEpoch(e) }

// fetchSessionKey names a partition in a session: by topic id in a session
// that uses topic ids (Fetch v13+), by name otherwise; the other field is
// zero. A v13 partition whose id is unknown stays in the session under its
// id and gets UNKNOWN_TOPIC_ID on each fetch, as in Kafka.
type fetchSessionKey struct {
	topic     string
	topicID   [16]byte
	partition int32
}

// fetchSessionParams are what a fetcher asks of one partition; an
// incremental request that names the partition replaces them.
type fetchSessionParams struct {
	fetchOffset        int64
	logStartOffset     int64 // the follower's, -1 for consumers
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
}

// fetchSessionPartition is a partition as the driver fetches it: its key,
// its parameters and, in an incremental fetch, the session's entry, which
// respond updates.
type fetchSessionPartition struct {
	key    fetchSessionKey
	params fetchSessionParams
	cached *sessionPartition
}

// fetchSessionResult is what a fetch read of one partition, and whether
// the response carries it (set by respond).
type fetchSessionResult struct {
	recordsBytes   int
	highWatermark  int64
	logStartOffset int64
	errorCode      int16
	// mustSend: the partition names a preferred read replica or a
	// diverging epoch, which the fetcher must see.
	mustSend bool
	send     bool
	// quiet: the read was at the partition's read bound and found
	// nothing, with no error (fetch_session_quiet.go); part and state
	// are the partition and its FetchState as the read began.
	quiet bool
	part  *replica.Partition
	state replica.FetchState
}

// sessionPartition is one partition of a session.
type sessionPartition struct {
	key    fetchSessionKey
	params fetchSessionParams
	// highWatermark and logStartOffset are what the fetcher was last told:
	// -1 until then, and the high watermark -1 again after an error so
	// that the partition is sent once the error clears.
	highWatermark  int64
	logStartOffset int64
	// quiet says when the next incremental fetch may skip the partition
	// without reading it (fetch_session_quiet.go).
	quiet      quietStamp
	prev, next *sessionPartition
}

// fetchSession is one cached session.
type fetchSession struct {
	id int32
	// epoch is the epoch the next incremental request must carry.
	epoch int32
	// privileged: created by a follower; see fetchSessionCache.tryEvict.
	privileged   bool
	usesTopicIDs bool
	createdMs    int64
	lastUsedMs   int64

	// parts indexes the list head..tail, the session's order.
	parts      map[fetchSessionKey]*sessionPartition
	head, tail *sessionPartition

	// cachedSize, evictableByAll and evictableByPrivileged are the
	// session's eviction standing, recomputed only when the cache touches
	// it (as Kafka's trees are); cachedSize is -1 outside the cache.
	cachedSize            int
	evictableByAll        bool
	evictableByPrivileged bool

	// quietBuf is the array of an incremental fetch's quiet partitions
	// (sessionReads), kept from one fetch to the next: lent to a fetch
	// (nil meanwhile; a fetch that finds it nil makes its own) and given
	// back when it finishes (giveQuietBuf). An idle follower's session
	// of 16,000 partitions would otherwise grow one from nothing each
	// fetch.
	quietBuf []quietRef
}

func newFetchSession(id int32, privileged, usesTopicIDs bool, nowMs int64, size int) *fetchSession {
	return &fetchSession{
		id: id, epoch: nextFetchSessionEpoch(fetchSessionInitialEpoch),
		privileged: privileged, usesTopicIDs: usesTopicIDs,
		createdMs: nowMs, lastUsedMs: nowMs,
		parts:      make(map[fetchSessionKey]*sessionPartition, size),
		cachedSize: -1,
	}
}

func (s *fetchSession) size() int { return len(s.parts) }

// add appends a partition at the end of the order.
func (s *fetchSession) add(p *sessionPartition) {
	s.parts[p.key] = p
	s.pushBack(p)
}

func (s *fetchSession) pushBack(p *sessionPartition) {
	p.prev, p.next = s.tail, nil
	if s.tail != nil {
		s.tail.next = p
	} else {
		s.head = p
	}
	s.tail = p
}

func (s *fetchSession) unlink(p *sessionPartition) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		s.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		s.tail = p.prev
	}
	p.prev, p.next = nil, nil
}

// update applies an incremental request: the partitions it names are added
// (at the end, with nothing told yet, so they are sent) or get its new
// parameters; then the forgotten ones leave.
func (s *fetchSession) update(req []fetchSessionPartition, forgotten []fetchSessionKey) {
	for _, r := range req {
		if p, ok := s.parts[r.key]; ok {
			p.params, p.quiet = r.params, quietStamp{}
			continue
		}
		s.add(&sessionPartition{key: r.key, params: r.params, highWatermark: -1, logStartOffset: -1})
	}
	for _, k := range forgotten {
		if p, ok := s.parts[k]; ok {
			s.unlink(p)
			delete(s.parts, k)
		}
	}
}

// respond decides which partitions an incremental response carries and
// records what they tell the fetcher. parts are what partitions returned
// for the request at reqEpoch (the session's partitions but the quiet
// ones it skipped), results what was read of each, qc the fetch's quiet
// context. It returns INVALID_FETCH_SESSION_EPOCH when another request
// used the session meanwhile (the session's epoch has moved on), and then
// changes nothing.
func (s *fetchSession) respond(reqEpoch int32, parts []fetchSessionPartition, results []fetchSessionResult, qc quietContext) int16 {
	if s.epoch != nextFetchSessionEpoch(reqEpoch) {
		return kerr.InvalidFetchSessionEpoch.Code
	}
	// No other request changed the session since parts were taken (each
	// change moves the epoch), so every cached entry is still in it.
	for i := range parts {
		p, r := parts[i].cached, &results[i]
		r.send = p.observe(r, qc)
		if r.recordsBytes > 0 {
			s.unlink(p)
			s.pushBack(p)
		}
	}
	return 0
}

// observe reports whether an incremental response must carry the
// partition, and remembers what it tells the fetcher: records, a new high
// watermark or log start offset, an error, a preferred read replica or a
// diverging epoch. Kafka does not compare the last stable offset: it
// moves only when a transaction marker is written, which the high
// watermark then passes. A quiet read stamps the partition quiet in the
// fetch's context qc, any other read clears the stamp.
func (p *sessionPartition) observe(r *fetchSessionResult, qc quietContext) bool {
	send := p.wouldSend(r)
	p.quiet = quietStamp{}
	if qc.ok && r.quiet {
		p.quiet = quietStamp{part: r.part, state: r.state, ctx: qc}
	}
	if r.errorCode != 0 {
		p.highWatermark = -1
	} else {
		p.highWatermark = r.highWatermark
	}
	p.logStartOffset = r.logStartOffset
	return send
}

// wouldSend is observe's answer without remembering anything.
func (p *sessionPartition) wouldSend(r *fetchSessionResult) bool {
	return r.recordsBytes > 0 || r.mustSend || r.errorCode != 0 ||
		p.highWatermark != r.highWatermark || p.logStartOffset != r.logStartOffset
}

// giveQuietBuf takes back the quiet list a fetch was lent (quiet, or any
// slice of its array), cleared so that it holds no partition the session
// may since have dropped.
func (s *fetchSession) giveQuietBuf(quiet []quietRef) {
	if cap(quiet) == 0 {
		return
	}
	quiet = quiet[:cap(quiet)]
	clear(quiet)
	s.quietBuf = quiet[:0]
}

// peek marks in results what respond would send, changing nothing.
func (s *fetchSession) peek(parts []fetchSessionPartition, results []fetchSessionResult) {
	for i := range parts {
		results[i].send = parts[i].cached.wouldSend(&results[i])
	}
}
