package replica

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/brook-mq/brook/log"
)

// TestFetchSessionHandler steps the follower's side of KIP-227, as Kafka's
// FetchSessionHandler: full fetches until the leader gives a session, then
// only added and changed partitions, with the ones left out forgotten; an
// error starts over with a full fetch.
func TestFetchSessionHandler(t *testing.T) {
	p := func(name string, part int32, offset int64) sessionFetchPartition {
		return sessionFetchPartition{key: sessionPartitionKey{topic: name, partition: part}, data: sessionPartitionData{fetchOffset: offset}}
	}
	keys := func(ps []sessionFetchPartition) []sessionPartitionKey {
		var out []sessionPartitionKey
		for _, x := range ps {
			out = append(out, x.key)
		}
		return out
	}
	a0, a1, b0 := p("a", 0, 0).key, p("a", 1, 0).key, p("b", 0, 0).key
	type step struct {
		name        string
		next        []sessionFetchPartition
		wantID      int32
		wantEpoch   int32
		wantSend    []sessionPartitionKey
		wantForget  []sessionPartitionKey
		respError   int16
		respSession int32
		netError    bool
	}
	steps := []step{
		{name: "first is full", next: []sessionFetchPartition{p("a", 0, 0), p("a", 1, 0)}, wantID: 0, wantEpoch: 0,
			wantSend: []sessionPartitionKey{a0, a1}, respSession: 0},
		{name: "no session given: full again", next: []sessionFetchPartition{p("a", 0, 0), p("a", 1, 0)}, wantID: 0, wantEpoch: 0,
			wantSend: []sessionPartitionKey{a0, a1}, respSession: 7},
		{name: "incremental, nothing changed", next: []sessionFetchPartition{p("a", 0, 0), p("a", 1, 0)}, wantID: 7, wantEpoch: 1, respSession: 7},
		{name: "a changed offset and an added partition", next: []sessionFetchPartition{p("a", 0, 5), p("a", 1, 0), p("b", 0, 0)}, wantID: 7, wantEpoch: 2,
			wantSend: []sessionPartitionKey{a0, b0}, respSession: 7},
		{name: "a partition left out is forgotten", next: []sessionFetchPartition{p("a", 0, 5), p("b", 0, 0)}, wantID: 7, wantEpoch: 3,
			wantForget: []sessionPartitionKey{a1}, respSession: 7, respError: kerr.InvalidFetchSessionEpoch.Code},
		{name: "after an error: full, closing the session", next: []sessionFetchPartition{p("a", 0, 5), p("b", 0, 0)}, wantID: 7, wantEpoch: 0,
			wantSend: []sessionPartitionKey{a0, b0}, respSession: 8},
		{name: "new session", next: []sessionFetchPartition{p("a", 0, 5), p("b", 0, 0)}, wantID: 8, wantEpoch: 1, netError: true},
		{name: "after a network error: full, closing the session", next: []sessionFetchPartition{p("a", 0, 5)}, wantID: 8, wantEpoch: 0,
			wantSend: []sessionPartitionKey{a0}, respSession: 9},
		{name: "session 9", next: []sessionFetchPartition{p("a", 0, 5)}, wantID: 9, wantEpoch: 1,
			respError: kerr.FetchSessionIDNotFound.Code},
		{name: "after an unknown session: a new full session", next: []sessionFetchPartition{p("a", 0, 5)}, wantID: 0, wantEpoch: 0,
			wantSend: []sessionPartitionKey{a0}},
	}
	var h fetchSessionHandler
	for _, s := range steps {
		id, epoch, send, forget := h.build(s.next)
		if id != s.wantID || epoch != s.wantEpoch || !slices.Equal(keys(send), s.wantSend) || !slices.Equal(forget, s.wantForget) {
			t.Fatalf("%s: built session %d epoch %d send %v forget %v; want %d %d %v %v",
				s.name, id, epoch, keys(send), forget, s.wantID, s.wantEpoch, s.wantSend, s.wantForget)
		}
		if s.netError {
			h.handleError()
		} else {
			h.handleResponse(s.respError, s.respSession)
		}
	}
}

// TestFetchSessionHandlerModel steps the handler, which updates its
// session in place, and a model that rebuilds everything each round (the
// handler as it was) through random rounds: partitions added, left out
// (so forgotten) and back, offsets and epochs moved, session errors. Each
// round must list and forget the same partitions, and every FetchSent
// built so far must still answer as the model's map of its round, keys
// shared by topics without an id included.
func TestFetchSessionHandlerModel(t *testing.T) {
	type model struct {
		epoch   int32
		session []sessionFetchPartition
		byKey   map[sessionPartitionKey]sessionPartitionData
	}
	build := func(m *model, next []sessionFetchPartition) (send []sessionFetchPartition, forget []sessionPartitionKey, sent map[sentKey]sentPartition) {
		prev, full := m.byKey, m.epoch == 0
		m.byKey = map[sessionPartitionKey]sessionPartitionData{}
		sent = map[sentKey]sentPartition{}
		for _, p := range next {
			m.byKey[p.key] = p.data
			if old, ok := prev[p.key]; full || !ok || old != p.data {
				send = append(send, p)
			}
			sent[sentKey{p.key.topicID, p.key.partition}] = sentPartition{
				log.TopicPartition{Topic: p.key.topic, Partition: p.key.partition}, p.data.fetchOffset, p.data.currentLeaderEpoch,
			}
		}
		if !full {
			for _, p := range m.session {
				if _, ok := m.byKey[p.key]; !ok {
					forget = append(forget, p.key)
				}
			}
		}
		m.session = slices.Clone(next)
		return send, forget, sent
	}
	// Topics "x" and "y" have no id, so their partitions share sentKeys.
	var all []sessionPartitionKey
	for _, topic := range []struct {
		name string
		id   [16]byte
	}{{"a", [16]byte{1}}, {"b", [16]byte{2}}, {"x", [16]byte{}}, {"y", [16]byte{}}} {
		for p := range int32(4) {
			all = append(all, sessionPartitionKey{topic: topic.name, topicID: topic.id, partition: p})
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 200 {
		var h fetchSessionHandler
		m := model{byKey: map[sessionPartitionKey]sessionPartitionData{}}
		data := map[sessionPartitionKey]sessionPartitionData{}
		type built struct {
			sent FetchSent
			want map[sentKey]sentPartition
		}
		var kept []built
		for round := range 30 {
			var next []sessionFetchPartition
			for _, i := range rng.Perm(len(all)) {
				k := all[i]
				if rng.IntN(5) == 0 {
					continue // left out this round
				}
				d := data[k]
				switch rng.IntN(6) {
				case 0:
					d.fetchOffset++
				case 1:
					d.currentLeaderEpoch++
				case 2:
					d.logStartOffset++
				}
				data[k] = d
				next = append(next, sessionFetchPartition{key: k, data: d})
			}
			if len(next) == 0 {
				continue // FetchRequest builds nothing
			}
			id, epoch, send, forget := h.build(next)
			wantSend, wantForget, wantSent := build(&m, next)
			if id != h.id || epoch != m.epoch || !slices.Equal(send, wantSend) || !slices.Equal(forget, wantForget) {
				t.Fatalf("run %d round %d: epoch %d send %v forget %v; want %d %v %v", run, round, epoch, send, forget, m.epoch, wantSend, wantForget)
			}
			kept = append(kept, built{FetchSent{r: h.sent.cur}, wantSent})
			for i, b := range kept {
				for _, k := range all {
					sk := sentKey{k.topicID, k.partition}
					got, ok := b.sent.lookup(sk)
					want, wantOK := b.want[sk]
					if got != want || ok != wantOK {
						t.Fatalf("run %d round %d: the FetchSent of round %d answers %v %v for %v, want %v %v", run, round, i, got, ok, sk, want, wantOK)
					}
				}
			}
			if rng.IntN(8) == 0 {
				h.handleError()
				m.epoch = 0
			} else {
				h.handleResponse(0, 7)
				if m.epoch == 0 {
					m.epoch = 1
				} else {
					m.epoch = NextFetchSessionEpoch(m.epoch)
				}
			}
		}
	}
	if got := (FetchSent{}); func() bool { _, ok := got.lookup(sentKey{}); return ok }() {
		t.Fatal("the zero FetchSent answers")
	}
}
