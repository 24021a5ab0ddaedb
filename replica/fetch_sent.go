package replica

// What each Fetch asked of its partitions (FetchSent), kept in step with
// the follower's fetch session (fetch_session.go) so that building a
// Fetch costs in proportion to what changed since the last one: a
// follower of a leader of 16,000 idle partitions used to fill a map of
// 16,000 entries for every fetch, twice a second.
//
// The table holds what the last build asked (live). A FetchSent of an
// earlier build still answers as it did when it was built: each build
// first records, in the round before it, the value of every key it is
// about to change (before), and a FetchSent looks a key up in its round
// and the rounds after it, then in live. The fetchers apply each answer
// before the next build, so the chain is short; one kept longer only
// keeps the rounds after it alive.

import "github.com/brook-mq/brook/log"

// sentPartition is what a fetch asked for one partition, to check that the
// answer still applies when it arrives.
type sentPartition struct {
	tp          log.TopicPartition
	fetchOffset int64
	leaderEpoch int32
}

// sentKey is how an answer names a partition: by topic id.
type sentKey struct {
	topicID   [16]byte
	partition int32
}

// FetchSent is what a Fetch request asked of each partition it fetches.
// The zero FetchSent asked nothing.
type FetchSent struct {
	r *sentRound
}

// lookup is what the fetch asked of the partition named k, if it
// fetched it.
func (s FetchSent) lookup(k sentKey) (sentPartition, bool) {
	if s.r == nil {
		return sentPartition{}, false
	}
	for r := s.r; r != nil; r = r.next {
		if b, ok := r.before[k]; ok {
			return b.sent, b.ok
		}
	}
	slot, ok := s.r.table.live[k]
	return slot.sent, ok
}

// sentSlot is a key's entry in the live table: what was asked, and of
// which session partition (several may share a key, sessionEntry).
type sentSlot struct {
	sent  sentPartition
	entry *sessionEntry
}

// sentBefore is a key's value in a round that a later build changed:
// ok false when the round did not fetch it.
type sentBefore struct {
	sent sentPartition
	ok   bool
}

// sentRound is one build's view of the table.
type sentRound struct {
	table *sentTable
	// before holds what this round asked of the keys the next build
	// changed; next is that build's round (nil for the latest).
	before map[sentKey]sentBefore
	next   *sentRound
}

// sentTable is what the partitions of the fetch session were last
// fetched at, keyed as the answers name them. Its methods are called by
// fetchSessionHandler.build: begin, then for each partition of the round
// add, changed and fetched, then remove for each one left out, then
// settle.
type sentTable struct {
	live map[sentKey]sentSlot
	// prev is the round of the build before the current one (nil before
	// the first), cur the current one's.
	prev, cur *sentRound
	// shared are the partitions fetched this round whose keys others
	// share, in the round's order.
	shared []*sessionEntry
}

func sentKeyOf(e *sessionEntry) sentKey {
	return sentKey{topicID: e.key.topicID, partition: e.key.partition}
}

func sentOf(e *sessionEntry) sentPartition {
	return sentPartition{
		tp:          log.TopicPartition{Topic: e.key.topic, Partition: e.key.partition},
		fetchOffset: e.data.fetchOffset, leaderEpoch: e.data.currentLeaderEpoch,
	}
}

// begin starts a round.
func (t *sentTable) begin() {
	if t.live == nil {
		t.live = map[sentKey]sentSlot{}
	}
	t.prev = t.cur
	t.cur = &sentRound{table: t}
	if t.prev != nil {
		t.prev.next = t.cur
	}
	t.shared = t.shared[:0]
}

// set makes k's live value slot, first keeping what the round before
// asked of it.
func (t *sentTable) set(k sentKey, slot sentSlot, keep bool) {
	if t.prev != nil {
		if _, done := t.prev.before[k]; !done {
			old, ok := t.live[k]
			if t.prev.before == nil {
				t.prev.before = map[sentKey]sentBefore{}
			}
			t.prev.before[k] = sentBefore{sent: old.sent, ok: ok}
		}
	}
	if keep {
		t.live[k] = slot
	} else {
		delete(t.live, k)
	}
}

// add takes a partition new to the session.
func (t *sentTable) add(e *sessionEntry) {
	k := sentKeyOf(e)
	if other, ok := t.live[k]; ok {
		// Which of them the answers' key names is settled at the end of
		// the round, as the last of the round's order.
		other.entry.sharesSent, e.sharesSent = true, true
		return
	}
	t.set(k, sentSlot{sent: sentOf(e), entry: e}, true)
}

// changed takes a new fetch offset, leader epoch or other parameter of a
// partition of the session (old are its former ones).
func (t *sentTable) changed(e *sessionEntry, old sessionPartitionData) {
	if e.sharesSent || (old.fetchOffset == e.data.fetchOffset && old.currentLeaderEpoch == e.data.currentLeaderEpoch) {
		return
	}
	t.set(sentKeyOf(e), sentSlot{sent: sentOf(e), entry: e}, true)
}

// fetched notes a partition the round fetches, after add or changed.
func (t *sentTable) fetched(e *sessionEntry) {
	if e.sharesSent {
		t.shared = append(t.shared, e)
	}
}

// remove takes a partition left out of the session.
func (t *sentTable) remove(e *sessionEntry) {
	k := sentKeyOf(e)
	if slot, ok := t.live[k]; ok && slot.entry == e {
		t.set(k, sentSlot{}, false)
	}
}

// settle gives each key that partitions share to the last of them in the
// round's order, as a map filled in that order would hold.
func (t *sentTable) settle() {
	for i := len(t.shared) - 1; i >= 0; i-- {
		e := t.shared[i]
		k := sentKeyOf(e)
		slot, ok := t.live[k]
		if ok && slot.entry.round == e.round && slot.entry.pos > e.pos {
			continue // a later one of the round holds it
		}
		if !ok || slot.entry != e || slot.sent != sentOf(e) {
			t.set(k, sentSlot{sent: sentOf(e), entry: e}, true)
		}
	}
	clear(t.shared)
}
