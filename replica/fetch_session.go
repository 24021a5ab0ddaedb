package replica

// The follower's side of fetch sessions (KIP-227), pure, as Kafka's
// FetchSessionHandler: it remembers what the leader's session holds and
// turns each round's partitions into a full or an incremental request.
// Its LeaderFetcher (fetcher_build.go) alone uses it.
//
// A fetch starts full at epoch 0; when the leader answers with a session
// id, later fetches are incremental (epoch 1, 2, ...) and list only the
// partitions added or whose fetch offset, log start offset, leader epoch
// or max bytes changed, and forget the ones left out this round (backed
// off, truncating, throttled, removed). A leader that gives no session
// (session id 0: sessions off or its cache full) gets full fetches. After
// a session error or a failed request the next fetch is full, closing the
// old session (its id with epoch 0); after FETCH_SESSION_ID_NOT_FOUND it
// is full without an id.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

type sessionPartitionKey struct {
	topic     string
	topicID   [16]byte
	partition int32
}

// sessionPartitionData is what a fetch asks of a partition; a change
// sends it again in an incremental fetch.
type sessionPartitionData struct {
	fetchOffset        int64
	logStartOffset     int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
}

type sessionFetchPartition struct {
	key  sessionPartitionKey
	data sessionPartitionData
}

// sessionEntry is a partition of the leader's session as this side
// remembers it, kept from one build to the next so that a build that
// changes little allocates little.
type sessionEntry struct {
	key  sessionPartitionKey
	data sessionPartitionData
	// round is the last build that listed the partition; an entry of the
	// session that the current build has not stamped is left out.
	round uint64
	// pos is the partition's place in that build's partitions, which
	// decides between partitions that share a sentKey (fetch_sent.go).
	pos int
	// sharesSent: another partition had the same sentKey while both were
	// in the session (topics without an id); it stays set.
	sharesSent bool
}

type fetchSessionHandler struct {
	// id and epoch are what the next request carries (0, 0: a new session).
	id, epoch int32
	// round counts the builds.
	round uint64
	// session is what the leader's session holds, in the order sent;
	// byKey indexes it. Both are updated in place by each build, so that
	// an idle round allocates neither; spare is the other half of
	// session's double buffer.
	session, spare []*sessionEntry
	byKey          map[sessionPartitionKey]*sessionEntry
	// sent is what each partition of the session was last fetched at,
	// for the answers (fetch_sent.go).
	sent sentTable
}

// build returns the session id and epoch of the next request, the
// partitions it lists and the ones it forgets, given every partition this
// round fetches (next, each key once); it takes next as the leader's
// session from now on, and starts a round of h.sent.
func (h *fetchSessionHandler) build(next []sessionFetchPartition) (id, epoch int32, send []sessionFetchPartition, forget []sessionPartitionKey) {
	if h.byKey == nil {
		h.byKey = make(map[sessionPartitionKey]*sessionEntry, len(next))
	}
	h.round++
	h.sent.begin()
	full := h.epoch == 0
	order := h.spare[:0]
	for i, p := range next {
		e := h.byKey[p.key]
		switch {
		case e == nil:
			e = &sessionEntry{key: p.key, data: p.data}
			h.byKey[p.key] = e
			h.sent.add(e)
			send = append(send, p)
		case e.data != p.data:
			old := e.data
			e.data = p.data
			h.sent.changed(e, old)
			send = append(send, p)
		case full:
			send = append(send, p)
		}
		e.round, e.pos = h.round, i
		h.sent.fetched(e)
		order = append(order, e)
	}
	for _, e := range h.session {
		if e.round == h.round {
			continue
		}
		if !full {
			forget = append(forget, e.key)
		}
		delete(h.byKey, e.key)
		h.sent.remove(e)
	}
	h.sent.settle()
	// Drop the pointers of the old order, so that removed entries can go.
	clear(h.session)
	h.session, h.spare = order, h.session[:0]
	return h.id, h.epoch, send, forget
}

// handleResponse takes the leader's answer: its top-level error code and
// session id.
func (h *fetchSessionHandler) handleResponse(errorCode int16, sessionID int32) {
	switch {
	case errorCode == kerr.FetchSessionIDNotFound.Code:
		h.id, h.epoch = 0, 0
	case errorCode != 0:
		h.epoch = 0 // close the session and try a new one
	case sessionID == 0:
		// No session (or it was closed): full fetches, asking again.
		h.id, h.epoch = 0, 0
	case h.epoch == 0:
		h.id, h.epoch = sessionID, 1
	default:
		h.epoch = NextFetchSessionEpoch(h.epoch)
	}
}

// handleError: the request failed; the next fetch is full, closing the
// session.
func (h *fetchSessionHandler) handleError() { h.epoch = 0 }

// NextFetchSessionEpoch is the session epoch after e, as Kafka's
// FetchMetadata.nextEpoch: it wraps from MaxInt32 to 1, never to 0 (a new
// session), and a negative epoch (the final one, -1) stays -1. The
// leader's session cache (broker) uses it too.
func NextFetchSessionEpoch(e int32) int32 {
	switch {
	case e < 0:
		return -1
	case e == math.MaxInt32:
		return 1
	default:
		return e + 1
	}
}
