package broker

// Quiet partitions: what makes an incremental fetch cost in proportion to
// what changed (issue 18). Kafka's incremental fetch reads every partition
// of its session and drops from the answer those with nothing new
// (CachedPartition.maybeUpdateResponseData); Brook skips, without reading
// or building any answer for them, the partitions whose answer would be
// dropped.
//
// A partition is quiet after a read that was at its read bound (the high
// watermark, the last stable offset for read_committed, the log end for a
// follower) and found nothing: no records, no error, no preferred read
// replica, no diverging epoch. Its session entry then keeps a stamp: the
// partition, its FetchState as the read began (leader, leader epoch, log
// start, high watermark, last stable offset, log end) and the fetch's
// context (the metadata generation, the fetcher's replica id and, for a
// follower, its broker epoch, the isolation level). The next incremental
// fetch reads it again only when one of them changed, the request names
// the partition (new fetch offset or other parameters), or its topic is
// no longer authorized; else the same read would find the same nothing,
// and Kafka would leave it out of the answer since the high watermark and
// log start the fetcher was told are those of the stamp. A follower's
// fetch that skips it is still recorded at the follower's broker epoch
// (stillQuiet), which the leader checks and names in ISR changes.
//
// What a quiet partition still costs: one FetchState (two uncontended
// locks) per incremental fetch, and for a follower's session, instead,
// the fetch recorded on the leader (RecordQuietFollowerFetch, the same
// two locks), which the ISR's replica.lag.time.max.ms needs whatever
// changed. A fetch that long-polls also watches its quiet partitions and,
// each time it wakes, reads those that changed (promoteQuiet). With a
// read replica selector (replica.selector.class and a client rack)
// nothing is quiet: the preferred replica depends on the followers, which
// no stamp follows.
// A follower's partitions are quiet too, as its fetch is still recorded:
// Kafka's leader, reading every partition of an incremental session, updates
// each follower's fetch state (Partition.updateFollowerFetchState) whether
// or not the answer carries it. (Followers' partitions were read whole for
// a while, after a restarted Kafka 3.9 follower of a Brook leader stayed out
// of the ISR in tests/interop TestMixedMembership; the cause was the leader
// ignoring last_fetched_epoch, replica/diverging.go, not the skip.)

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/brook-mq/brook/auth"
	"github.com/brook-mq/brook/log"
	"github.com/brook-mq/brook/replica"
)

// quietContext is what, besides the partition's FetchState, a quiet answer
// depends on in one fetch.
type quietContext struct {
	// ok: partitions may be quiet in this fetch (no read replica selector).
	ok bool
	// meta is the metadata generation (metadataCache.changes): a topic
	// deleted, re-created or renumbered changes it.
	meta      <-chan struct{}
	replicaID int32
	// replicaEpoch is a follower's broker epoch (fetchReplicaEpoch): a
	// fetch of a new incarnation is another context, recorded afresh.
	replicaEpoch int64
	isolation    int8
}

// quietStamp marks a session partition quiet; part nil: not quiet.
type quietStamp struct {
	part  *replica.Partition
	state replica.FetchState
	ctx   quietContext
}

// quietRef is a quiet partition skipped by one fetch: its session entry
// and its partition, to watch while the fetch long-polls.
type quietRef struct {
	sp   *sessionPartition
	part *replica.Partition
}

func (b *Broker) quietContext(req *kmsg.FetchRequest, sel readReplicaSelector) quietContext {
	return quietContext{
		ok:           sel.clientRack == "",
		meta:         b.meta.changes(),
		replicaID:    fetchReplicaID(req),
		replicaEpoch: fetchReplicaEpoch(req),
		isolation:    req.IsolationLevel,
	}
}

// quietAuth remembers, for one scan of a session, whether each topic is
// still authorized: ACLs can change while the partition is quiet, and
// Kafka answers TOPIC_AUTHORIZATION_FAILED in the next incremental fetch.
type quietAuth struct {
	topics    map[string]bool
	cluster   bool
	clusterOK bool
}

func (a *quietAuth) authorized(b *Broker, r *request, follower bool, topic string) bool {
	if b.acls == nil {
		return true
	}
	if follower {
		if !a.cluster {
			a.cluster, a.clusterOK = true, b.authorizeCluster(r, auth.OpClusterAction)
		}
		return a.clusterOK
	}
	ok, seen := a.topics[topic]
	if !seen {
		if a.topics == nil {
			a.topics = map[string]bool{}
		}
		ok = b.authorize(r, auth.OpRead, auth.ResourceTopic, topic)
		a.topics[topic] = ok
	}
	return ok
}

// stillQuiet reports whether sp may be skipped in a fetch of context qc;
// the fetch sessions' lock is held. recordFetch: record a follower's
// fetch of it, as reading it would (UpdateFollowerFetch), the first time
// a fetch looks at it.
func (b *Broker) stillQuiet(r *request, sp *sessionPartition, qc quietContext, a *quietAuth, recordFetch bool) bool {
	q := &sp.quiet
	if !qc.ok || q.part == nil || q.ctx != qc {
		return false
	}
	follower := qc.replicaID >= 0
	if follower && recordFetch {
		// Authorized first: a fetch that is refused is not recorded.
		if !a.authorized(b, r, follower, q.part.TopicPartition().Topic) {
			return false
		}
		// Recorded only if the partition is still as stamped, and quiet
		// only if it still is once recorded: the fetch may have moved
		// the high watermark, which the follower must then be told.
		quiet, err := q.part.RecordQuietFollowerFetch(q.state, qc.replicaID, qc.replicaEpoch, sp.params.fetchOffset, sp.params.logStartOffset)
		return err == nil && quiet
	}
	return q.part.FetchState() == q.state && a.authorized(b, r, follower, q.part.TopicPartition().Topic)
}

// sessionReads splits an incremental fetch's session, in its order, into
// the partitions to read and the quiet ones, which it returns only when
// the fetch may long-poll (keepQuiet); the fetch sessions' lock is held.
// The quiet list is the session's buffer (fetchSession.quietBuf), lent
// to this fetch until it finishes.
func (b *Broker) sessionReads(r *request, s *fetchSession, qc quietContext, keepQuiet bool) ([]fetchSessionPartition, []quietRef) {
	var parts []fetchSessionPartition
	var quiet []quietRef
	if keepQuiet {
		quiet, s.quietBuf = s.quietBuf[:0], nil
	}
	var a quietAuth
	for p := s.head; p != nil; p = p.next {
		if b.stillQuiet(r, p, qc, &a, true) {
			if keepQuiet {
				quiet = append(quiet, quietRef{sp: p, part: p.quiet.part})
			}
			continue
		}
		parts = append(parts, fetchSessionPartition{key: p.key, params: p.params, cached: p})
	}
	return parts, quiet
}

// watchQuiet watches a long-polling fetch's quiet partitions, as the fetch
// watches those it reads (WatchAppends for a follower, Watch otherwise),
// until unwatchQuiet of the same list: no func per partition is kept.
func watchQuiet(quiet []quietRef, follower bool, wake chan struct{}) {
	for _, q := range quiet {
		q.part.AddWatch(wake, follower)
	}
}

// unwatchQuiet ends watchQuiet(quiet, follower, wake).
func unwatchQuiet(quiet []quietRef, follower bool, wake chan struct{}) {
	for _, q := range quiet {
		q.part.RemoveWatch(wake, follower)
	}
}

// promoteQuiet moves the quiet partitions of a long-polling incremental
// fetch that changed since it looked at them to the partitions it reads:
// request entries (st.req), targets, response partitions and regions
// appended in the session's order. It reports whether any moved. Once the
// session's epoch has moved on (another fetch used it), none do: the
// answer will be INVALID_FETCH_SESSION_EPOCH. The partitions that moved
// leave st.quiet but stay in its array, past its length, so that
// st.watched still lists every partition watchQuiet watched.
func (b *Broker) promoteQuiet(r *request, st *fetchSessionState, resp *kmsg.FetchResponse, regions *[][]log.Slice, targets *[]fetchTarget) bool {
	if len(st.quiet) == 0 {
		return false
	}
	var moved []fetchSessionPartition
	fs := b.fetchSessions
	fs.mu.Lock()
	if s := st.ctx.session; s.epoch == nextFetchSessionEpoch(st.ctx.reqEpoch) {
		var a quietAuth
		kept := 0
		for i, q := range st.quiet {
			if b.stillQuiet(r, q.sp, st.qc, &a, false) {
				// Swapped, not overwritten: the kept keep their order.
				st.quiet[kept], st.quiet[i] = q, st.quiet[kept]
				kept++
				continue
			}
			moved = append(moved, fetchSessionPartition{key: q.sp.key, params: q.sp.params, cached: q.sp})
		}
		st.quiet = st.quiet[:kept]
	}
	fs.mu.Unlock()
	if len(moved) == 0 {
		return false
	}
	more := sessionFetchRequest(st.req, moved)
	st.req.Topics = append(st.req.Topics, more.Topics...)
	st.parts = append(st.parts, moved...)
	*targets = b.resolveFetchTopics(r, st.req, more.Topics, resp, regions, *targets)
	return true
}
