package broker

// The fetch session cache (Kafka's FetchSessionCache and FetchManager),
// pure: the driver passes the time in milliseconds and holds the lock.
//
// Sessions outlive connections, as in Kafka: a consumer that reconnects
// goes on with its session. What bounds them is the cache:
// max.incremental.fetch.session.cache.slots sessions at most (0 turns
// sessions off), and a full fetch that finds no room gets no session
// (session_id 0) unless it may evict one (tryEvict). Kafka splits the
// slots over 8 shards and evicts within a shard; Brook keeps one cache, so
// that a cache of one slot behaves as one slot.

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// fetchSessionEvictionMs is Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
// (a constant, not a config): a session unused this long is stale and the
// first to go; a younger one is safe from consumers' new sessions, and a
// follower's from everybody.
const fetchSessionEvictionMs = 120_000

// fetchSessionMaxPartitions bounds the partitions over all cached sessions
// (about 250 bytes each with the index). Kafka has no such bound: a
// client could grow one session without end through incremental
// additions. A full fetch that would pass it gets no session; an
// incremental one that would is closed with FETCH_SESSION_ID_NOT_FOUND,
// after which the client fetches in full.
const fetchSessionMaxPartitions = 1_000_000

type fetchSessionCache struct {
	maxSlots int
	// newID draws a random positive session id (injected for tests).
	newID    func() int32
	sessions map[int32]*fetchSession
	// partitions is the number of partitions over all sessions, at most
	// maxPartitions.
	partitions, maxPartitions int
}

func newFetchSessionCache(maxSlots int, newID func() int32) *fetchSessionCache {
	return &fetchSessionCache{maxSlots: maxSlots, maxPartitions: fetchSessionMaxPartitions, newID: newID, sessions: map[int32]*fetchSession{}}
}

// fetchContextKind is how a fetch is served, from its session fields.
type fetchContextKind uint8

const (
	// fetchSessionless: a full fetch that gets no session (epoch -1, a
	// version before 7, or an incremental fetch that emptied its session).
	fetchSessionless fetchContextKind = iota
	// fetchFull: a full fetch (epoch 0) that asks for a new session.
	fetchFull
	// fetchIncremental: a fetch in an existing session, of all its partitions.
	fetchIncremental
	// fetchSessionError: the session fields are wrong; the response
	// carries only the error.
	fetchSessionError
)

// fetchContext is what newContext decided for one request.
type fetchContext struct {
	kind      fetchContextKind
	errorCode int16
	// session and reqEpoch, for an incremental fetch.
	session  *fetchSession
	reqEpoch int32
}

// newContext reads a request's session id and epoch, as Kafka's
// FetchManager.newContext does. A full fetch (epoch 0 or -1) first closes
// the session it names. An incremental fetch must name a cached session
// at its current epoch, with topic ids when the session has them; its
// partitions (req) and forgotten partitions then update the session, and
// the session's epoch moves on. A session left empty is closed and the
// fetch is served without one.
func (c *fetchSessionCache) newContext(nowMs int64, id, epoch int32, version int16, req []fetchSessionPartition, forgotten []fetchSessionKey) fetchContext {
	// With no slots no session can exist or be made: every fetch is
	// sessionless, without the bookkeeping of a full one.
	if version < 7 || c.maxSlots == 0 {
		return fetchContext{kind: fetchSessionless}
	}
	if epoch == fetchSessionInitialEpoch || epoch == fetchSessionFinalEpoch {
		if s, ok := c.sessions[id]; ok && id != fetchSessionNoID {
			c.remove(s)
		}
		if epoch == fetchSessionFinalEpoch {
			return fetchContext{kind: fetchSessionless}
		}
		return fetchContext{kind: fetchFull}
	}
	s, ok := c.sessions[id]
	switch {
	case !ok:
		return fetchContext{kind: fetchSessionError, errorCode: kerr.FetchSessionIDNotFound.Code}
	case s.epoch != epoch:
		return fetchContext{kind: fetchSessionError, errorCode: kerr.InvalidFetchSessionEpoch.Code}
	case s.usesTopicIDs != (version >= 13):
		return fetchContext{kind: fetchSessionError, errorCode: kerr.FetchSessionTopicIDError.Code}
	}
	s.update(req, forgotten)
	if s.size() == 0 {
		c.remove(s)
		return fetchContext{kind: fetchSessionless}
	}
	if c.partitions-s.cachedSize+s.size() > c.maxPartitions {
		c.remove(s)
		return fetchContext{kind: fetchSessionError, errorCode: kerr.FetchSessionIDNotFound.Code}
	}
	c.touch(s, nowMs)
	s.epoch = nextFetchSessionEpoch(s.epoch)
	return fetchContext{kind: fetchIncremental, session: s, reqEpoch: epoch}
}

// createSession is the end of a full fetch: it caches a session of the
// partitions fetched (parts, with what was read of each in results) if
// there is room or one may be evicted, and returns its id, or 0.
func (c *fetchSessionCache) createSession(nowMs int64, privileged bool, version int16, parts []fetchSessionPartition, results []fetchSessionResult, qc quietContext) int32 {
	if c.partitions+len(parts) > c.maxPartitions ||
		len(c.sessions) >= c.maxSlots && !c.tryEvict(privileged, len(parts), nowMs) {
		return fetchSessionNoID
	}
	id := c.newID()
	for id <= fetchSessionNoID || c.sessions[id] != nil {
		id = c.newID()
	}
	s := newFetchSession(id, privileged, version >= 13, nowMs, len(parts))
	for i, p := range parts {
		sp := &sessionPartition{key: p.key, params: p.params, highWatermark: -1, logStartOffset: -1}
		sp.observe(&results[i], qc)
		if _, dup := s.parts[p.key]; !dup {
			s.add(sp)
		}
	}
	c.sessions[id] = s
	c.touch(s, nowMs)
	return id
}

// tryEvict makes room for a new session of size partitions, as Kafka's
// tryEvict: the least recently used session goes if it is stale (unused
// for fetchSessionEvictionMs); otherwise the least valuable evictable one
// goes if the newcomer is worth at least as much. Value orders
// (privileged, size, id): a follower's session beats a consumer's, a
// bigger one a smaller one. A session is evictable by a newcomer
// only once it is older than fetchSessionEvictionMs, except that a
// follower may evict a young consumer session.
func (c *fetchSessionCache) tryEvict(privileged bool, size int, nowMs int64) bool {
	var lru *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsedMs < lru.lastUsedMs || s.lastUsedMs == lru.lastUsedMs && s.id < lru.id {
			lru = s
		}
	}
	if lru == nil {
		return false
	}
	if nowMs-lru.lastUsedMs > fetchSessionEvictionMs {
		c.remove(lru)
		return true
	}
	var victim *fetchSession
	for _, s := range c.sessions {
		evictable := s.evictableByAll
		if privileged {
			evictable = s.evictableByPrivileged
		}
		if evictable && (victim == nil || evictableLess(s.privileged, s.cachedSize, s.id, victim)) {
			victim = s
		}
	}
	// The newcomer's key has id 0, below every session id: it must be
	// worth strictly more to evict.
	if victim == nil || evictableLess(privileged, size, 0, victim) {
		return false
	}
	c.remove(victim)
	return true
}

// evictableLess orders sessions by Kafka's EvictableKey (privileged, size, id).
func evictableLess(privileged bool, size int, id int32, s *fetchSession) bool {
	if privileged != s.privileged {
		return !privileged
	}
	if size != s.cachedSize {
		return size < s.cachedSize
	}
	return id < s.id
}

// touch marks a session used now and recomputes its eviction standing.
func (c *fetchSessionCache) touch(s *fetchSession, nowMs int64) {
	s.lastUsedMs = nowMs
	if s.cachedSize >= 0 {
		c.partitions -= s.cachedSize
	}
	s.cachedSize = s.size()
	c.partitions += s.cachedSize
	old := nowMs-s.createdMs > fetchSessionEvictionMs
	s.evictableByPrivileged = !s.privileged || old
	s.evictableByAll = old
}

func (c *fetchSessionCache) remove(s *fetchSession) {
	if c.sessions[s.id] != s {
		return
	}
	delete(c.sessions, s.id)
	c.partitions -= s.cachedSize
	s.cachedSize = -1
}
